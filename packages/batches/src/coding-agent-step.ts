import { homedir } from "node:os";
import { dirname, isAbsolute, join } from "node:path";
import { fileURLToPath } from "node:url";
// What a `codingAgent` step needs beyond a `run` step, as in src-cli's codingAgent contract: the
// agent version, model and install source of the run (never constants of the code), the platform
// it runs on (detected, not assumed), a model-provider token minted for the workspace job, and
// the script renderCodingAgentStep makes of it all.
import {
  type AgentPlatform,
  type AgentTypeRegistry,
  type CodingAgentResult,
  defaultAgentRegistry,
  type InstallSource,
  type RenderedCodingAgentStep,
  renderCodingAgentStep,
} from "@deckhand/batch-spec";
import { type ContainerRuntime, runContainer } from "@deckhand/container-runtime";
import { errorMessage } from "@deckhand/errors";
import { type BatchCodingAgentOptions, WireEnv } from "@deckhand/wire";
import { BatchesError } from "./batches-error.ts";

/**
 * The settings of a run's `codingAgent` steps, keyed by agent type (`codex`, `claude-code`, …).
 * A step whose type lacks a version, a model or an install source fails, naming what to set.
 */
export interface CodingAgentOptions {
  /** Agent type → the version to install and check, e.g. `{ codex: "0.169.0" }`. */
  versions: Readonly<Record<string, string>>;
  /** Agent type → the model the agent asks the proxy for, e.g. `{ codex: "gpt-5.3-codex" }`. */
  models: Readonly<Record<string, string>>;
  /** Where agents are installed from, for every type without an entry in `installSources`. */
  installSource?: InstallSource;
  /** Agent type → where that type is installed from. */
  installSources?: Readonly<Record<string, InstallSource>>;
  /**
   * For local steps: the directory each agent version is installed under, as
   * `<installDirectory>/<type>/<version>`; absolute, or starting with `$HOME/`. Default
   * `$HOME/.deckhand/agents` (the renderer's).
   */
  installDirectory?: string;
  /** The same inside a step's container. Default `/tmp/deckhand/agents`. */
  containerInstallDirectory?: string;
  /** The agent types steps may name; default the built-in ones. */
  registry?: AgentTypeRegistry;
}

/** Model-provider access lent to one workspace job; `release` revokes its token. */
export interface ModelProviderJobLease {
  /** The proxy's base URL without an agent type (`<server>/model-provider`). */
  baseUrl: string;
  /** The scoped token, bound to the job id. */
  token: string;
  release(): Promise<void>;
}

/**
 * Lends a workspace job access to the model-provider proxy. The server passes
 * `leaseModelProvider` of `@deckhand/model-proxy` bound to its token store and URL; one lease
 * serves every agent type of the job, since a token is bound to a job, not to an agent type.
 */
export interface ModelProviderAccess {
  lease(jobId: string): Promise<ModelProviderJobLease>;
}

/** Where a container step installs agents unless told otherwise: writable for any user. */
export const DEFAULT_CONTAINER_INSTALL_DIRECTORY = "/tmp/deckhand/agents";

/**
 * The model-provider access of one workspace run: leased at the first `codingAgent` step that
 * runs (a run without one mints nothing), reused by every later one, released once at the end.
 */
export class JobModelProviderLease {
  readonly #access: ModelProviderAccess | undefined;
  readonly #jobId: string | undefined;
  #lease: ModelProviderJobLease | undefined;
  #released = false;
  /** The token once leased: what no event, record, result or error may show. */
  readonly secrets: string[] = [];

  constructor(access: ModelProviderAccess | undefined, jobId: string | undefined) {
    this.#access = access;
    this.#jobId = jobId;
  }

  async get(): Promise<{ lease: ModelProviderJobLease; jobId: string }> {
    const access = this.#access;
    const jobId = this.#jobId;
    if (access === undefined || jobId === undefined || jobId === "") {
      const missing = [
        ...(access === undefined ? ["modelProvider (model-provider access for the job)"] : []),
        ...(jobId === undefined || jobId === "" ? ["jobId (the workspace job's id)"] : []),
      ];
      throw new BatchesError(
        "coding_agent_unavailable",
        `codingAgent steps reach models only through Deckhand's model-provider proxy, with a token minted for the workspace job: pass ${missing.join(" and ")} in runWorkspace's options`,
      );
    }
    if (this.#released) {
      throw new BatchesError("coding_agent_unavailable", "the workspace run has ended");
    }
    if (this.#lease === undefined) {
      let lease: ModelProviderJobLease;
      try {
        lease = await access.lease(jobId);
      } catch (error) {
        throw new BatchesError(
          "coding_agent_unavailable",
          `no model-provider token could be leased for job ${jobId}: ${errorMessage(error)}`,
          { cause: error },
        );
      }
      this.#lease = lease;
      this.secrets.push(lease.token);
    }
    return { lease: this.#lease, jobId };
  }

  /**
   * Revokes the token, once. A revocation that fails is not the run's failure: the lease's
   * provider reports it, and the token's expiry bounds it.
   */
  async release(): Promise<void> {
    this.#released = true;
    const lease = this.#lease;
    this.#lease = undefined;
    if (lease !== undefined) await lease.release().catch(() => {});
  }
}

export interface AgentSettings {
  version: string;
  model: string;
  installSource: InstallSource;
}

/** The version, model and install source of `type`, or an error naming every one missing. */
export function codingAgentSettings(
  options: CodingAgentOptions | undefined,
  type: string,
): AgentSettings {
  const registry = options?.registry ?? defaultAgentRegistry;
  if (!registry.has(type)) {
    throw new BatchesError(
      "coding_agent_unavailable",
      `unknown codingAgent type "${type}"; known types: ${registry.types().join(", ")}`,
    );
  }
  const key = JSON.stringify(type);
  const version = options?.versions[type];
  const model = options?.models[type];
  const installSource = options?.installSources?.[type] ?? options?.installSource;
  const missing: string[] = [];
  if (version === undefined) {
    missing.push(`codingAgent.versions[${key}] (the ${type} version to install, e.g. 0.169.0)`);
  }
  if (model === undefined) {
    missing.push(`codingAgent.models[${key}] (the model ${type} asks the proxy for)`);
  }
  if (installSource === undefined) {
    missing.push(
      `codingAgent.install_source or codingAgent.install_sources[${key}] (a release mirror, an npm registry or an installed binary to take ${type} from)`,
    );
  }
  if (version === undefined || model === undefined || installSource === undefined) {
    throw new BatchesError(
      "coding_agent_unavailable",
      `the ${type} coding agent is not configured for this run: set ${missing.join(", ")} in config.json or the run's coding_agent options`,
    );
  }
  return { version, model, installSource };
}

let localPlatformMemo: AgentPlatform | undefined;

/** This machine's platform, from Node itself; on Linux, glibc unless Node runs on musl. */
export function localPlatform(): AgentPlatform {
  if (localPlatformMemo !== undefined) return localPlatformMemo;
  const platform: AgentPlatform = { os: process.platform, arch: process.arch };
  if (process.platform === "linux") {
    // A glibc build of Node reports the glibc it runs on; on musl there is none.
    const header = (process.report?.getReport() as { header?: { glibcVersionRuntime?: string } })
      ?.header;
    platform.libc = header?.glibcVersionRuntime === undefined ? "musl" : "glibc";
  }
  localPlatformMemo = platform;
  return platform;
}

export const PLATFORM_PROBE =
  "uname -m; if ls /lib/ld-musl-* >/dev/null 2>&1; then echo musl; else echo glibc; fi";

/**
 * The platform of a container of `image`: Linux, the machine `uname -m` reports in it (an image
 * of another architecture run under emulation reports its own), and musl when the image has
 * musl's loader. An image that cannot answer is taken for Linux on this machine's architecture.
 */
export async function containerPlatform(
  runtime: ContainerRuntime,
  image: string,
  signal: AbortSignal,
): Promise<AgentPlatform> {
  try {
    const probe = await runContainer(runtime, {
      image,
      script: PLATFORM_PROBE,
      shell: "/bin/sh",
      signal,
      timeoutMs: 120_000,
    });
    const [machine, libc] = probe.output.text.trim().split(/\s+/);
    if (probe.exitCode === 0 && machine !== undefined && machine !== "") {
      return { os: "linux", arch: machine, libc: libc === "musl" ? "musl" : "glibc" };
    }
  } catch {
    // The image cannot start at all; the step's own run reports why.
  }
  return { os: "linux", arch: process.arch };
}

export interface AgentScriptInput {
  type: string;
  /** The prompt, templated with the step context. */
  prompt: string;
  settings: AgentSettings;
  platform: AgentPlatform;
  /** The model-provider proxy's base URL, without an agent type. */
  modelProviderUrl: string;
  /** The step's image, or what is said of where a local step runs. */
  image: string;
  /** The step's own environment, rendered. */
  env: Readonly<Record<string, string>>;
  /** Where this version of the agent is installed; the renderer's default otherwise. */
  installDirectory?: string;
  /** A local step's own agent state directory. */
  stateDirectory?: string;
  registry?: AgentTypeRegistry;
}

/**
 * The script that installs and runs a `codingAgent` step's agent, and its environment: one
 * rendering for the steps a run runs and the script `deckhand batch render` prints.
 */
export function renderAgentScript(
  input: AgentScriptInput,
): CodingAgentResult<RenderedCodingAgentStep> {
  return renderCodingAgentStep(
    {
      type: input.type,
      prompt: input.prompt,
      version: input.settings.version,
      model: input.settings.model,
      platform: input.platform,
      installSource: input.settings.installSource,
      modelProviderUrl: input.modelProviderUrl,
      image: input.image,
      ...(input.installDirectory !== undefined ? { installDirectory: input.installDirectory } : {}),
      ...(input.stateDirectory !== undefined ? { stateDirectory: input.stateDirectory } : {}),
      env: input.env,
    },
    input.registry === undefined ? {} : { registry: input.registry },
  );
}

export interface CodingAgentScriptInput {
  type: string;
  /** The prompt, templated with the step context. */
  prompt: string;
  settings: AgentSettings;
  platform: AgentPlatform;
  runtime: "local" | "container";
  /** The step's image, or undefined when it runs locally. */
  image: string | undefined;
  /** The step's own environment, rendered. */
  env: Readonly<Record<string, string>>;
  /**
   * For a local step: the step's own agent state directory (the runner removes it with the
   * step's other temporary files). A container step makes one inside its container.
   */
  stateDirectory?: string;
  lease: ModelProviderJobLease;
  jobId: string;
  options: CodingAgentOptions | undefined;
}

/**
 * The step's script and its whole environment: the step's `env`, what the renderer adds (the
 * proxy URL) and the per-job variables it asks the runner to forward, the token and the job id,
 * taken from the lease. The script itself carries no secret.
 */
export function codingAgentScript(input: CodingAgentScriptInput): {
  script: string;
  env: Record<string, string>;
} {
  const { type, settings, options } = input;
  const root =
    input.runtime === "container"
      ? (options?.containerInstallDirectory ?? DEFAULT_CONTAINER_INSTALL_DIRECTORY)
      : options?.installDirectory;
  const rendered = renderAgentScript({
    type,
    prompt: input.prompt,
    settings,
    platform: input.platform,
    modelProviderUrl: input.lease.baseUrl,
    image: input.image ?? "this machine (the step runs locally)",
    ...(root === undefined
      ? {}
      : { installDirectory: `${root.replace(/\/+$/, "")}/${type}/${settings.version}` }),
    ...(input.runtime === "local" && input.stateDirectory !== undefined
      ? { stateDirectory: input.stateDirectory }
      : {}),
    env: input.env,
    ...(options?.registry === undefined ? {} : { registry: options.registry }),
  });
  if (!rendered.ok) {
    throw new BatchesError(
      "coding_agent_unavailable",
      `the ${type} step cannot be rendered: ${rendered.error.message}`,
    );
  }
  const perJob: Readonly<Record<string, string>> = {
    [WireEnv.modelProviderToken]: input.lease.token,
    [WireEnv.jobId]: input.jobId,
  };
  const env = { ...rendered.value.env };
  for (const name of rendered.value.forwardedEnv) {
    const value = perJob[name];
    if (value === undefined) {
      throw new BatchesError(
        "coding_agent_unavailable",
        `the renderer asks for ${name} to be forwarded, which this runner does not know`,
      );
    }
    env[name] = value;
  }
  return { script: rendered.value.script, env };
}

/**
 * Where a local step installs `type` at `version`: `<installDirectory>/<type>/<version>`, with a
 * leading `$HOME/` read from `home`; the renderer's `$HOME/.deckhand/agents` by default.
 */
export function localAgentInstallDirectory(
  options: CodingAgentOptions | undefined,
  type: string,
  version: string,
  home: string = process.env.HOME || homedir(),
): string {
  const root = (options?.installDirectory ?? "$HOME/.deckhand/agents").replace(/\/+$/, "");
  const absolute = root.startsWith("$HOME/") ? join(home, root.slice("$HOME/".length)) : root;
  return join(absolute, type, version);
}

/**
 * The hosts a local `codingAgent` step reaches to install its agent, as sandbox allow-list
 * patterns: a release mirror's host (and GitHub's asset host, where its releases redirect), the
 * npm registry's; none for a `file://` mirror or an installed binary. The step reaches nothing
 * else but the model proxy.
 */
export function installSourceHosts(source: InstallSource): string[] {
  if (source.kind === "installed") return [];
  const url = new URL(
    source.kind === "release" ? source.baseUrl : (source.registry ?? "https://registry.npmjs.org"),
  );
  if (url.protocol !== "http:" && url.protocol !== "https:") return [];
  const host = url.hostname.replace(/^\[(.*)\]$/, "$1");
  const hosts = [url.port === "" ? host : `${host}:${url.port}`];
  if (host === "github.com") hosts.push("*.githubusercontent.com");
  return hosts;
}

/**
 * What a local `codingAgent` step must see of this machine to install its agent, wherever it
 * lies (a sandbox has its own /tmp and hides Deckhand's data): a `file://` mirror's directory,
 * an installed binary's directory.
 */
export function installSourcePaths(source: InstallSource): string[] {
  if (source.kind === "installed") {
    return source.path !== undefined && isAbsolute(source.path) ? [dirname(source.path)] : [];
  }
  if (source.kind === "release" && source.baseUrl.startsWith("file:")) {
    return [fileURLToPath(source.baseUrl)];
  }
  return [];
}

type WireInstallSource = NonNullable<BatchCodingAgentOptions["install_source"]>;

/** An install source as config.json and the API spell it, as the renderer takes it. */
function installSourceOf(source: WireInstallSource): InstallSource {
  if (source.kind === "release") return { kind: "release", baseUrl: source.base_url };
  if (source.kind === "npm") {
    return { kind: "npm", ...(source.registry ? { registry: source.registry } : {}) };
  }
  return { kind: "installed", ...(source.path ? { path: source.path } : {}) };
}

/**
 * The service's agent settings with a run's own on top, per agent type. A run's
 * `install_source` replaces the service's default one but not the service's per-type
 * `install_sources` (an operator's offline mirror for one agent stays in force); a run's
 * per-type entries replace the service's for those types.
 */
export function codingAgentOptions(
  defaults: BatchCodingAgentOptions | undefined,
  run: BatchCodingAgentOptions | undefined,
): CodingAgentOptions {
  const source = run?.install_source ?? defaults?.install_source;
  const perType = { ...defaults?.install_sources, ...run?.install_sources };
  return {
    versions: { ...defaults?.versions, ...run?.versions },
    models: { ...defaults?.models, ...run?.models },
    ...(source === undefined ? {} : { installSource: installSourceOf(source) }),
    ...(Object.keys(perType).length === 0
      ? {}
      : {
          installSources: Object.fromEntries(
            Object.entries(perType).map(([type, given]) => [type, installSourceOf(given)]),
          ),
        }),
  };
}
