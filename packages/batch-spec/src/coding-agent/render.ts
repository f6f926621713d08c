import { redactSecrets } from "@deckhand/secrets";
import { WireEnv } from "@deckhand/wire";
import { BatchSpecError } from "../batch-spec-error.ts";
import { type AgentPlatform, platformName, resolvePlatform } from "./platform.ts";
import { type AgentTypeRegistry, defaultAgentRegistry } from "./registry.ts";
import { isEnvName, shellQuote, shellValue } from "./shell-quote.ts";
import type {
  AgentInstallContext,
  AgentTypeDefinition,
  CodingAgentResult,
  InstallSource,
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
   */
  installDirectory?: string;
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

/** An http(s) base URL without a trailing slash, or why it is not one. */
function baseUrl(value: string, what: string): CodingAgentResult<string> {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return invalid(`${what} "${value}" is not a URL; give an http:// or https:// URL`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    return invalid(`${what} "${value}" is not an http:// or https:// URL`);
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

/** The install directory as a shell word: `"$HOME"'/rest'` or a quoted absolute path. */
function installDirectoryWord(path: string): CodingAgentResult<string> {
  const trimmed = path.length > 1 ? path.replace(/\/+$/, "") : path;
  const relative = trimmed.startsWith(HOME_PREFIX) ? trimmed.slice(HOME_PREFIX.length) : undefined;
  if (relative === undefined && !trimmed.startsWith("/")) {
    return invalid(`install directory "${path}" must be absolute or start with $HOME/`);
  }
  if (CONTROL.test(trimmed) || trimmed.split("/").some((segment) => segment === "..")) {
    return invalid(`install directory "${path}" must not contain ".." or control characters`);
  }
  if (relative?.includes("$")) {
    return invalid(`install directory "${path}" may use $HOME only as its start`);
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

  let source: InstallSource;
  if (input.installSource.kind === "release") {
    const releaseUrl = baseUrl(input.installSource.baseUrl, "release base URL");
    if (!releaseUrl.ok) return releaseUrl;
    source = { kind: "release", baseUrl: releaseUrl.value };
  } else if (input.installSource.kind === "npm") {
    source = { kind: "npm" };
    if (input.installSource.registry !== undefined) {
      const registryUrl = baseUrl(input.installSource.registry, "npm registry");
      if (!registryUrl.ok) return registryUrl;
      source = { kind: "npm", registry: `${registryUrl.value}/` };
    }
  } else {
    return invalid(
      `install source kind "${(input.installSource as { kind: string }).kind}" is unknown; use "release" or "npm"`,
    );
  }

  const directory = installDirectoryWord(
    input.installDirectory ?? defaultInstallDirectory(input.type, input.version),
  );
  if (!directory.ok) return directory;

  const env = input.env ?? {};
  const secretEnvNames = [...(input.secretEnvNames ?? [])];
  const envError = checkEnv(env, secretEnvNames);
  if (envError) return { ok: false, error: envError };

  const context: AgentInstallContext = { version: input.version, platform: platform.value, source };
  let script: string;
  try {
    script = renderScript(definition, context, {
      image: input.image,
      directory: directory.value,
      usesHome: directory.value.startsWith('"$HOME"'),
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
      agentPath: `${directory.value}/bin/${definition.binary}`,
    },
  };
}

interface ScriptParts {
  image: string;
  directory: string;
  usesHome: boolean;
  prompt: string;
  model: string;
  baseUrl: string;
}

function unique(values: readonly string[]): string[] {
  return [...new Set(values)];
}

function renderScript(
  definition: AgentTypeDefinition,
  context: AgentInstallContext,
  parts: ScriptParts,
): string {
  const { type, binary } = definition;
  const platform = platformName(context.platform);
  const describe = `${type} ${context.version}`;
  const binaries = unique(definition.requiredBinaries(context));
  const install = definition.install(context);
  const run = definition.run({
    prompt: parts.prompt,
    model: parts.model,
    version: context.version,
    baseUrl: parts.baseUrl,
  });
  const expected = definition.expectedVersionOutput(context.version);
  const libc = context.platform.os === "linux" ? `, ${context.platform.libc}` : "";

  const lines: string[] = [
    "#!/bin/sh",
    `# Deckhand codingAgent step: ${type} ${context.version} for ${platform}${libc}, installed from ${install.origin}.`,
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
  if (parts.usesHome) {
    lines.push(
      // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion
      'if [ -z "${HOME:-}" ]; then',
      "  deckhand_fail 'HOME is not set; the agent is installed under it'",
      "fi",
    );
  }
  lines.push(
    "",
    `deckhand_install_dir=${parts.directory}`,
    `deckhand_agent="$deckhand_install_dir/bin/${binary}"`,
    `deckhand_expected_version=${shellQuote(expected)}`,
    "",
    "# True when $1 --version prints the pinned version's line; keeps the output for messages.",
    "deckhand_reports_version() {",
    '  deckhand_version_output=$("$1" --version 2>&1 </dev/null) || return 1',
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
    `    deckhand_fail '%s --version printed "%s", expected "%s"; check that %s serves %s for %s' "$1" "\${deckhand_version_output:-}" "$deckhand_expected_version" ${shellQuote(install.origin)} ${shellQuote(describe)} ${shellQuote(platform)}`,
    "  fi",
    "}",
    "",
    'if [ -x "$deckhand_agent" ] && deckhand_reports_version "$deckhand_agent"; then',
    `  printf 'deckhand: %s already installed at %s\\n' ${shellQuote(describe)} "$deckhand_agent" >&2`,
    "else",
    `  printf 'deckhand: installing %s from %s\\n' ${shellQuote(describe)} ${shellQuote(install.origin)} >&2`,
    '  mkdir -p "$deckhand_install_dir/bin"',
    "  # The stage sits inside the install directory, so moving it into place is a rename.",
    '  deckhand_stage=$(mktemp -d "$deckhand_install_dir/.stage.XXXXXX")',
    "  trap 'rm -rf \"$deckhand_stage\"' EXIT",
    "  trap 'exit 129' HUP",
    "  trap 'exit 130' INT",
    "  trap 'exit 143' TERM",
    ...install.lines.map((line) => `  ${line}`),
    `  deckhand_check_version "$deckhand_stage/${install.entry}"`,
    "  # Verified: keep the stage under a name of its own, then swap the link in one rename.",
    // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion
    '  deckhand_tree="tree-${deckhand_stage##*.}"',
    '  mv "$deckhand_stage" "$deckhand_install_dir/$deckhand_tree"',
    `  ln -s "../$deckhand_tree/${install.entry}" "$deckhand_install_dir/bin/.${binary}.$deckhand_tree"`,
    `  mv -f "$deckhand_install_dir/bin/.${binary}.$deckhand_tree" "$deckhand_agent"`,
    "  trap - EXIT HUP INT TERM",
    "fi",
    'deckhand_check_version "$deckhand_agent"',
    "",
    `# Run ${type} non-interactively on the prompt, pointed at the model-provider proxy.`,
  );
  for (const name of run.unset) lines.push(`unset ${name}`);
  for (const assignment of run.environment) {
    if (!isEnvName(assignment.name)) {
      throw new BatchSpecError("invalid_env_name", `"${assignment.name}" is not a valid name`);
    }
    lines.push(`export ${assignment.name}=${shellValue(assignment.value)}`);
  }
  lines.push(`exec "$deckhand_agent" \\`);
  for (const group of argumentLines(run.arguments)) lines.push(`  ${group} \\`);
  lines.push("  </dev/null", "");
  return lines.join("\n");
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
