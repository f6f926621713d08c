import { redactSecrets } from "@deckhand/secrets";
import { WireEnv } from "@deckhand/wire";
import { BatchSpecError } from "../batch-spec-error.ts";
import { type AgentPlatform, platformName, resolvePlatform } from "./platform.ts";
import { type AgentTypeRegistry, defaultAgentRegistry } from "./registry.ts";
import { isEnvName, shellQuote, shellValue } from "./shell-quote.ts";
import {
  AGENT_STATE_DIRECTORY,
  type AgentInstallContext,
  type AgentRunPlan,
  type AgentTypeDefinition,
  type CodingAgentResult,
  type InstallSource,
} from "./types.ts";

/**
 * Everything one render depends on. All of it comes from the run (the spec step, the
 * workspace's inputs, the server's configuration); the renderer has no version, model, URL or
 * platform of its own.
 */
export interface RenderCodingAgentStepInput {
  /** `codingAgent.type`. */
  type: string;
  /** The prompt, already templated with the step context. */
  prompt: string;
  /** The agent version to install and check, e.g. `0.169.0`. */
  version: string;
  /** The model the agent asks the proxy for. */
  model: string;
  /** The platform the step runs on, decided by the caller. */
  platform: AgentPlatform;
  installSource: InstallSource;
  /** The proxy's base URL; the agent talks to `<modelProviderUrl>/<type>`. */
  modelProviderUrl: string;
  /** The step's image, named in errors about missing binaries. */
  image: string;
  /**
   * Deckhand-owned directory for this agent version: an absolute path, or one under `$HOME/`
   * (expanded when the script runs). Defaults to `$HOME/.deckhand/agents/<type>/<version>`.
   * Steps on one machine that share it download the version once: an install holds a lock
   * there that every other step's install waits for.
   */
  installDirectory?: string;
  /**
   * The step's own agent state directory (the agent's home for configuration, caches and
   * databases): absolute or under `$HOME/`, made if missing, and the caller's to remove. By
   * default the script makes a fresh one with `mktemp -d` under `$TMPDIR` (or `/tmp`).
   */
  stateDirectory?: string;
  /** Further environment for the step, passed by the runner (not written into the script). */
  env?: Readonly<Record<string, string>>;
  /** Names in `env` whose values are secret, hidden in `redactedScript` and logs. */
  secretEnvNames?: readonly string[];
}

export interface RenderedCodingAgentStep {
  /** The POSIX shell script the step runs. It contains no secret: credentials are read from
   * the environment when it runs. */
  script: string;
  /** `script` with the values of secret env entries replaced by `[REDACTED]`, for display. */
  redactedScript: string;
  /** Environment the runner sets for the step: `env` plus the model-provider URL. */
  env: Record<string, string>;
  /** Per-job variables the runner copies from its own environment into the step's. */
  forwardedEnv: string[];
  /** Names of `env` entries that are secret (for `redactEnv` and `redactArgs`). */
  secretEnvNames: string[];
  /** The agent's executable once installed, as a shell word. */
  agentPath: string;
}

export interface RenderOptions {
  registry?: AgentTypeRegistry;
}

/** Where an agent version is installed unless the caller says otherwise. */
export function defaultInstallDirectory(type: string, version: string): string {
  return `$HOME/.deckhand/agents/${type}/${version}`;
}

const VERSION = /^[0-9A-Za-z][0-9A-Za-z.+_-]*$/;
const CONTROL = /[\u0000-\u001f\u007f]/;
const HOME_PREFIX = "$HOME/";

function invalid(message: string): { ok: false; error: BatchSpecError } {
  return { ok: false, error: new BatchSpecError("invalid_render_input", message) };
}

/** An http(s) (or, where allowed, file) base URL without a trailing slash, or why not. */
function baseUrl(value: string, what: string, allowFile = false): CodingAgentResult<string> {
  const kinds = allowFile ? "an http://, https:// or file:// URL" : "an http:// or https:// URL";
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return invalid(`${what} "${value}" is not a URL; give ${kinds}`);
  }
  const file = allowFile && url.protocol === "file:";
  if (url.protocol !== "http:" && url.protocol !== "https:" && !file) {
    return invalid(`${what} "${value}" is not ${kinds}`);
  }
  if (file && url.host !== "") {
    return invalid(`${what} "${value}" names a host; a file:// URL is a local path, file:///…`);
  }
  if (url.username !== "" || url.password !== "") {
    // The URL is written into the script, which is shown and logged.
    return invalid(`${what} must not contain credentials; the script carrying it is shown in logs`);
  }
  if (url.search !== "" || url.hash !== "") {
    return invalid(
      `${what} "${value}" must not have a query or fragment; paths are appended to it`,
    );
  }
  return { ok: true, value: url.href.replace(/\/+$/, "") };
}

/** A directory as a shell word: `"$HOME"'/rest'` or a quoted absolute path. */
function directoryWord(path: string, what = "install directory"): CodingAgentResult<string> {
  const trimmed = path.length > 1 ? path.replace(/\/+$/, "") : path;
  const relative = trimmed.startsWith(HOME_PREFIX) ? trimmed.slice(HOME_PREFIX.length) : undefined;
  if (relative === undefined && !trimmed.startsWith("/")) {
    return invalid(`${what} "${path}" must be absolute or start with $HOME/`);
  }
  if (CONTROL.test(trimmed) || trimmed.split("/").some((segment) => segment === "..")) {
    return invalid(`${what} "${path}" must not contain ".." or control characters`);
  }
  if (relative?.includes("$")) {
    return invalid(`${what} "${path}" may use $HOME only as its start`);
  }
  return {
    ok: true,
    value: relative === undefined ? shellQuote(trimmed) : `"$HOME"${shellQuote(`/${relative}`)}`,
  };
}

/** Variables the runner forwards per job; a spec or caller setting them would pin a credential. */
const FORWARDED_ENV: readonly string[] = [WireEnv.modelProviderToken, WireEnv.jobId];

function checkEnv(
  env: Readonly<Record<string, string>>,
  secretNames: readonly string[],
): BatchSpecError | undefined {
  for (const [name, value] of Object.entries(env)) {
    if (!isEnvName(name)) {
      return new BatchSpecError(
        "invalid_render_input",
        `env name "${name}" is not a valid environment variable name; use letters, digits and _`,
      );
    }
    if (FORWARDED_ENV.includes(name) || name === WireEnv.modelProviderUrl) {
      return new BatchSpecError(
        "invalid_render_input",
        `env ${name} is set by Deckhand for every codingAgent step; remove it from the step's env`,
      );
    }
    if (value.includes("\u0000")) {
      return new BatchSpecError(
        "invalid_render_input",
        `env ${name} contains a NUL character; remove it`,
      );
    }
  }
  for (const name of secretNames) {
    if (!isEnvName(name)) {
      return new BatchSpecError(
        "invalid_render_input",
        `secret env name "${name}" is not a valid name`,
      );
    }
  }
  return undefined;
}

/**
 * Renders a `codingAgent` step as one POSIX shell script that:
 * 1. checks that the image has every binary the install and the run need, naming each missing
 *    one and the image in a single message;
 * 2. checks that the runner forwarded the model-provider token and the job id;
 * 3. installs the agent at the pinned version unless that version is already in place: into a
 *    fresh `mktemp -d` stage inside the install directory (same filesystem, so the final
 *    `mv` is a rename), verified with `--version` before it is moved into place and linked, so
 *    a failed or retried install never leaves a half-written executable where the next run
 *    looks;
 * 4. checks that the installed agent reports the pinned version;
 * 5. runs the agent non-interactively on the prompt, pointed at `<modelProviderUrl>/<type>`,
 *    with stdin closed.
 */
export function renderCodingAgentStep(
  input: RenderCodingAgentStepInput,
  options: RenderOptions = {},
): CodingAgentResult<RenderedCodingAgentStep> {
  const registry = options.registry ?? defaultAgentRegistry;
  const definition = registry.get(input.type);
  if (!definition) {
    return {
      ok: false,
      error: new BatchSpecError(
        "unknown_agent_type",
        `unknown codingAgent type "${input.type}"; known types: ${registry.types().join(", ")}`,
      ),
    };
  }
  if (!VERSION.test(input.version)) {
    return invalid(
      `${input.type} version "${input.version}" is not a version; give one like 0.169.0 (letters, digits, . + _ -)`,
    );
  }
  if (input.model === "" || CONTROL.test(input.model)) {
    return invalid(`model "${input.model}" must be a non-empty name without control characters`);
  }
  if (input.prompt.includes("\u0000")) {
    return invalid(
      "the prompt contains a NUL character, which no command-line argument can carry; remove it",
    );
  }
  if (input.prompt.trim() === "")
    return invalid(`the ${input.type} prompt is empty; say what the agent should do`);
  if (input.image === "" || input.image.includes("\u0000")) {
    return invalid("image must be a non-empty image name");
  }
  const platform = resolvePlatform(input.platform, definition);
  if (!platform.ok) return platform;
  const providerUrl = baseUrl(input.modelProviderUrl, "model-provider URL");
  if (!providerUrl.ok) return providerUrl;

  const source = installSource(input.installSource);
  if (!source.ok) return source;

  const directory = directoryWord(
    input.installDirectory ?? defaultInstallDirectory(input.type, input.version),
  );
  if (!directory.ok) return directory;
  const state =
    input.stateDirectory === undefined
      ? undefined
      : directoryWord(input.stateDirectory, "state directory");
  if (state !== undefined && !state.ok) return state;

  const env = input.env ?? {};
  const secretEnvNames = [...(input.secretEnvNames ?? [])];
  const envError = checkEnv(env, secretEnvNames);
  if (envError) return { ok: false, error: envError };

  const context: AgentInstallContext = {
    version: input.version,
    platform: platform.value,
    source: source.value,
  };
  let script: string;
  try {
    script = renderScript(definition, context, {
      image: input.image,
      directory: directory.value,
      state: state?.value,
      prompt: input.prompt,
      model: input.model,
      baseUrl: `${providerUrl.value}/${definition.type}`,
    });
  } catch (error) {
    // Definitions build shell words with shellQuote and friends, which throw on values no
    // shell can carry; a render reports that instead of throwing.
    if (error instanceof BatchSpecError) return { ok: false, error };
    throw error;
  }

  const secretValues = secretEnvNames.flatMap((name) =>
    env[name] === undefined ? [] : [env[name]],
  );
  return {
    ok: true,
    value: {
      script,
      redactedScript: redactSecrets(script, secretValues),
      env: { ...env, [WireEnv.modelProviderUrl]: providerUrl.value },
      forwardedEnv: [...FORWARDED_ENV],
      secretEnvNames,
      agentPath:
        source.value.kind === "installed"
          ? source.value.path === undefined
            ? definition.binary
            : shellQuote(source.value.path)
          : `${directory.value}/bin/${definition.binary}`,
    },
  };
}

/** The install source with its URLs checked and normalised, or why it cannot be used. */
function installSource(given: InstallSource): CodingAgentResult<InstallSource> {
  if (given.kind === "release") {
    const releaseUrl = baseUrl(given.baseUrl, "release base URL", true);
    if (!releaseUrl.ok) return releaseUrl;
    return { ok: true, value: { kind: "release", baseUrl: releaseUrl.value } };
  }
  if (given.kind === "npm") {
    if (given.registry === undefined) return { ok: true, value: { kind: "npm" } };
    const registryUrl = baseUrl(given.registry, "npm registry");
    if (!registryUrl.ok) return registryUrl;
    return { ok: true, value: { kind: "npm", registry: `${registryUrl.value}/` } };
  }
  if (given.kind === "installed") {
    if (given.path === undefined) return { ok: true, value: { kind: "installed" } };
    if (!given.path.startsWith("/") || CONTROL.test(given.path)) {
      return invalid(
        `installed agent path "${given.path}" must be an absolute path without control characters`,
      );
    }
    return { ok: true, value: { kind: "installed", path: given.path } };
  }
  return invalid(
    `install source kind "${(given as { kind: string }).kind}" is unknown; use "release", "npm" or "installed"`,
  );
}

interface ScriptParts {
  image: string;
  /** The install directory as a shell word. */
  directory: string;
  /** The state directory as a shell word; a fresh temporary one when undefined. */
  state: string | undefined;
  prompt: string;
  model: string;
  baseUrl: string;
}

function unique(values: readonly string[]): string[] {
  return [...new Set(values)];
}

/**
 * The script: the preamble (failure helper, binaries, forwarded values), the install (or the
 * lookup of an installed binary) and its version check, then the agent's run.
 */
function renderScript(
  definition: AgentTypeDefinition,
  context: AgentInstallContext,
  parts: ScriptParts,
): string {
  const run = definition.run({
    prompt: parts.prompt,
    model: parts.model,
    version: context.version,
    baseUrl: parts.baseUrl,
  });
  const source = context.source;
  const install =
    source.kind === "installed"
      ? installedLines(definition, context, source.path)
      : downloadLines(definition, { ...context, source }, parts.directory);
  const binaries = unique([
    ...definition.requiredBinaries(context),
    ...(source.kind === "installed" ? [] : LOCK_BINARIES),
    ...(usesState(run) ? (parts.state === undefined ? ["mktemp"] : ["mkdir"]) : []),
    ...(run.stateFiles?.length ? ["mkdir"] : []),
  ]);
  return [
    ...preambleLines(definition, context, install.origin, parts, binaries),
    ...stateLines(run, parts.state),
    ...environmentLines(run),
    ...versionCheckLines(definition, context, install.origin),
    ...install.lines,
    'deckhand_check_version "$deckhand_agent"',
    "",
    ...runLines(definition, run),
    "",
  ].join("\n");
}

/** Binaries the install lock needs besides the staging ones (`flock` is used when present). */
const LOCK_BINARIES: readonly string[] = ["mkdir", "rm", "sleep"];

function preambleLines(
  definition: AgentTypeDefinition,
  context: AgentInstallContext,
  origin: string,
  parts: ScriptParts,
  binaries: readonly string[],
): string[] {
  const { type } = definition;
  const platform = platformName(context.platform);
  const libc = context.platform.os === "linux" ? `, ${context.platform.libc}` : "";
  const lines = [
    "#!/bin/sh",
    `# Deckhand codingAgent step: ${type} ${context.version} for ${platform}${libc}, installed from ${origin}.`,
    "# Rendered for one run: version, model, platform, URLs and prompt are that run's inputs.",
    "set -eu",
    "",
    "deckhand_fail() {",
    "  deckhand_format=$1",
    "  shift",
    '  printf "deckhand: $deckhand_format\\n" "$@" >&2',
    "  exit 1",
    "}",
    "",
    "# Every binary the install and the run need, checked up front and reported together.",
    "deckhand_missing=",
    `for deckhand_binary in ${binaries.map(shellQuote).join(" ")}; do`,
    '  if ! command -v "$deckhand_binary" >/dev/null 2>&1; then',
    // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion
    '    deckhand_missing="${deckhand_missing:+$deckhand_missing, }$deckhand_binary"',
    "  fi",
    "done",
    'if [ -n "$deckhand_missing" ]; then',
    `  deckhand_fail '%s not found in image %s; use an image that has them (%s needs: %s)' "$deckhand_missing" ${shellQuote(parts.image)} ${shellQuote(type)} ${shellQuote(binaries.join(" "))}`,
    "fi",
    "",
    "# Per-job values the runner forwards; the agent reads them from the environment.",
  ];
  for (const name of FORWARDED_ENV) {
    lines.push(
      `if [ -z "\${${name}:-}" ]; then`,
      `  deckhand_fail '%s is not set; the runner forwards it into every codingAgent step' ${shellQuote(name)}`,
      "fi",
    );
  }
  const usesHome = context.source.kind !== "installed" && parts.directory.startsWith('"$HOME"');
  if (usesHome || parts.state?.startsWith('"$HOME"')) {
    lines.push(
      // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion
      'if [ -z "${HOME:-}" ]; then',
      "  deckhand_fail 'HOME is not set; the agent is installed under it'",
      "fi",
    );
  }
  lines.push("");
  return lines;
}

/** `deckhand_reports_version` and `deckhand_check_version`, for the pinned version's line. */
function versionCheckLines(
  definition: AgentTypeDefinition,
  context: AgentInstallContext,
  origin: string,
): string[] {
  const describe = `${definition.type} ${context.version}`;
  const platform = platformName(context.platform);
  return [
    `deckhand_expected_version=${shellQuote(definition.expectedVersionOutput(context.version))}`,
    "",
    "# True when $1 --version prints the pinned version's line; keeps the output for messages.",
    "deckhand_reports_version() {",
    '  deckhand_version_output=$(deckhand_agent_environment; "$1" --version 2>&1 </dev/null) || return 1',
    "  while IFS= read -r deckhand_line; do",
    '    if [ "$deckhand_line" = "$deckhand_expected_version" ]; then return 0; fi',
    "  done <<DECKHAND_VERSION_OUTPUT",
    "$deckhand_version_output",
    "DECKHAND_VERSION_OUTPUT",
    "  return 1",
    "}",
    "",
    "deckhand_check_version() {",
    '  if ! deckhand_reports_version "$1"; then',
    `    deckhand_fail '%s --version printed "%s", expected "%s"; check that %s serves %s for %s' "$1" "\${deckhand_version_output:-}" "$deckhand_expected_version" ${shellQuote(origin)} ${shellQuote(describe)} ${shellQuote(platform)}`,
    "  fi",
    "}",
    "",
  ];
}

/** A binary already installed: the given path, or the agent's name looked up on PATH. */
function installedLines(
  definition: AgentTypeDefinition,
  context: AgentInstallContext,
  path: string | undefined,
): { origin: string; lines: string[] } {
  const { type, binary } = definition;
  if (path !== undefined) {
    return {
      origin: path,
      lines: [
        `deckhand_agent=${shellQuote(path)}`,
        'if [ ! -x "$deckhand_agent" ]; then',
        `  deckhand_fail '%s is not an executable file; install %s there or change codingAgent.install_sources.%s' "$deckhand_agent" ${shellQuote(`${type} ${context.version}`)} ${shellQuote(type)}`,
        "fi",
      ],
    };
  }
  return {
    origin: `${binary} on PATH`,
    lines: [
      `if ! deckhand_agent=$(command -v ${shellQuote(binary)}); then`,
      `  deckhand_fail '%s is not on PATH (%s); install %s or give its path in codingAgent.install_sources.%s' ${shellQuote(binary)} "$PATH" ${shellQuote(`${type} ${context.version}`)} ${shellQuote(type)}`,
      "fi",
    ],
  };
}

/**
 * The lock that makes one install per version per machine: every step whose install directory
 * is the same (`<data-dir>/agents/<type>/<version>`, whichever process runs it) takes it before
 * installing and, once it has it, looks again, so a step that waited finds the version its
 * neighbour installed instead of downloading it a second time. `flock` where the image has it
 * (released by the kernel however the holder dies); elsewhere a lock directory holding the
 * holder's pid, taken over when that process is gone.
 */
function installLockLines(describe: string): string[] {
  const waiting = `printf 'deckhand: waiting for another step installing %s into %s\\n' ${shellQuote(describe)} "$deckhand_install_dir" >&2`;
  return [
    'deckhand_lock="$deckhand_install_dir/.install.lock"',
    "deckhand_lock_install() {",
    "  if command -v flock >/dev/null 2>&1; then",
    '    exec 9>>"$deckhand_lock"',
    "    if ! flock -n 9; then",
    `      ${waiting}`,
    "      flock 9",
    "    fi",
    "    return 0",
    "  fi",
    "  deckhand_waiting=",
    '  while ! mkdir "$deckhand_lock.d" 2>/dev/null; do',
    "    deckhand_holder=",
    '    if [ -f "$deckhand_lock.d/pid" ]; then read -r deckhand_holder <"$deckhand_lock.d/pid" || :; fi',
    '    if [ -n "$deckhand_holder" ] && ! kill -0 "$deckhand_holder" 2>/dev/null; then',
    "      # Its holder is gone without releasing it (killed mid-install): the lock is stale.",
    '      rm -rf "$deckhand_lock.d"',
    "      continue",
    "    fi",
    '    if [ -z "$deckhand_waiting" ]; then',
    `      ${waiting}`,
    "      deckhand_waiting=1",
    "    fi",
    "    sleep 1",
    "  done",
    '  echo "$$" >"$deckhand_lock.d/pid"',
    "  deckhand_lock_directory=1",
    "}",
    "deckhand_unlock_install() {",
    // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion
    '  if [ -n "${deckhand_lock_directory:-}" ]; then rm -rf "$deckhand_lock.d"; fi',
    "  deckhand_lock_directory=",
    "  exec 9>&-",
    "}",
    "",
  ];
}

/**
 * A download into the install directory: unless the pinned version is already there, under the
 * install lock, into a fresh `mktemp -d` stage inside the install directory (same filesystem,
 * so the final `mv` is a rename), verified with `--version` before it is moved into place and
 * linked, so a failed or retried install never leaves a half-written executable where the next
 * run looks.
 */
function downloadLines(
  definition: AgentTypeDefinition,
  context: AgentInstallContext & { source: Exclude<InstallSource, { kind: "installed" }> },
  directory: string,
): { origin: string; lines: string[] } {
  const { type, binary } = definition;
  const describe = `${type} ${context.version}`;
  const install = definition.install(context);
  const installed =
    'if [ -x "$deckhand_agent" ] && deckhand_reports_version "$deckhand_agent"; then';
  return {
    origin: install.origin,
    lines: [
      `deckhand_install_dir=${directory}`,
      `deckhand_agent="$deckhand_install_dir/bin/${binary}"`,
      ...installLockLines(describe),
      installed,
      `  printf 'deckhand: %s already installed at %s\\n' ${shellQuote(describe)} "$deckhand_agent" >&2`,
      "else",
      '  mkdir -p "$deckhand_install_dir/bin"',
      "  deckhand_lock_install",
      "  trap 'deckhand_unlock_install' EXIT",
      `  ${installed}`,
      `    printf 'deckhand: %s was installed by another step at %s\\n' ${shellQuote(describe)} "$deckhand_agent" >&2`,
      "  else",
      `    printf 'deckhand: installing %s from %s\\n' ${shellQuote(describe)} ${shellQuote(install.origin)} >&2`,
      "    # The stage sits inside the install directory, so moving it into place is a rename.",
      '    deckhand_stage=$(mktemp -d "$deckhand_install_dir/.stage.XXXXXX")',
      "    trap 'rm -rf \"$deckhand_stage\"; deckhand_unlock_install' EXIT",
      "    trap 'exit 129' HUP",
      "    trap 'exit 130' INT",
      "    trap 'exit 143' TERM",
      ...install.lines.map((line) => `    ${line}`),
      `    deckhand_check_version "$deckhand_stage/${install.entry}"`,
      "    # Verified: keep the stage under a name of its own, then swap the link in one rename.",
      // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion
      '    deckhand_tree="tree-${deckhand_stage##*.}"',
      '    mv "$deckhand_stage" "$deckhand_install_dir/$deckhand_tree"',
      `    ln -s "../$deckhand_tree/${install.entry}" "$deckhand_install_dir/bin/.${binary}.$deckhand_tree"`,
      `    mv -f "$deckhand_install_dir/bin/.${binary}.$deckhand_tree" "$deckhand_agent"`,
      "  fi",
      "  deckhand_unlock_install",
      "  trap - EXIT HUP INT TERM",
      "fi",
    ],
  };
}

const STATE_FILE = /^[A-Za-z0-9._-]+(?:\/[A-Za-z0-9._-]+)*$/;

/** True when the run uses the step's state directory. */
function usesState(run: AgentRunPlan): boolean {
  const isState = (part: unknown) =>
    typeof part === "object" && part !== null && (part as { env?: string }).env === stateVariable;
  return (
    (run.stateFiles?.length ?? 0) > 0 ||
    run.environment.some((assignment) => assignment.value.some(isState))
  );
}

const stateVariable = (AGENT_STATE_DIRECTORY as { env: string }).env;

/**
 * The step's own state directory and the files the agent reads there, made before anything
 * runs the agent (its `--version` included: some agents write to their home even then).
 */
function stateLines(run: AgentRunPlan, state: string | undefined): string[] {
  if (!usesState(run)) return [];
  const lines = [
    "# The step's own agent state (configuration, caches, databases), apart from every other job's.",
  ];
  if (state === undefined) {
    lines.push(`${stateVariable}=$(mktemp -d "\${TMPDIR:-/tmp}/deckhand-agent-state.XXXXXX")`);
  } else {
    lines.push(`${stateVariable}=${state}`, `mkdir -p "$${stateVariable}"`);
  }
  for (const file of run.stateFiles ?? []) {
    if (!STATE_FILE.test(file.path) || file.path.split("/").includes("..")) {
      throw new BatchSpecError("invalid_stage_path", `"${file.path}" is not a plain relative path`);
    }
    const slash = file.path.lastIndexOf("/");
    if (slash > 0) lines.push(`mkdir -p "$${stateVariable}/${file.path.slice(0, slash)}"`);
    lines.push(`printf '%s\\n' ${shellQuote(file.content)} >"$${stateVariable}/${file.path}"`);
  }
  lines.push("");
  return lines;
}

/**
 * `deckhand_agent_environment`: the variables the agent runs with, set for its version checks
 * (in their subshell) and for its run alike, so neither reads the runner's own agent state.
 */
function environmentLines(run: AgentRunPlan): string[] {
  const lines = [
    "# The agent's environment, for its version checks and its run alike.",
    "deckhand_agent_environment() {",
  ];
  for (const name of run.unset) lines.push(`  unset ${name}`);
  for (const assignment of run.environment) {
    if (!isEnvName(assignment.name)) {
      throw new BatchSpecError("invalid_env_name", `"${assignment.name}" is not a valid name`);
    }
    lines.push(`  export ${assignment.name}=${shellValue(assignment.value)}`);
  }
  lines.push("  :", "}", "");
  return lines;
}

/** The `exec` of the agent, in its environment, on the prompt. */
function runLines(definition: AgentTypeDefinition, run: AgentRunPlan): string[] {
  const lines = [
    `# Run ${definition.type} non-interactively on the prompt, pointed at the model-provider proxy.`,
    "deckhand_agent_environment",
    `exec "$deckhand_agent" \\`,
  ];
  for (const group of argumentLines(run.arguments)) lines.push(`  ${group} \\`);
  lines.push("  </dev/null");
  return lines;
}

/**
 * One option per line with its value beside it (`-c 'model="m"'`, `-- 'prompt'`), so the
 * rendered command reads like the agent's documentation. Layout only: every argument is its
 * own shell word either way.
 */
function argumentLines(args: readonly string[]): string[] {
  const groups: string[] = [];
  for (let index = 0; index < args.length; index++) {
    const argument = args[index]!;
    const next = args[index + 1];
    const takesValue = argument.startsWith("-") && !argument.includes("=");
    if (takesValue && next !== undefined && !next.startsWith("-")) {
      groups.push(`${shellQuote(argument)} ${shellQuote(next)}`);
      index++;
    } else {
      groups.push(shellQuote(argument));
    }
  }
  return groups;
}
