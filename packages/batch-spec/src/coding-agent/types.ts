import type { BatchSpecError } from "../batch-spec-error.ts";
import type { PlatformName, ResolvedPlatform } from "./platform.ts";
import type { ShellValuePart } from "./shell-quote.ts";

/** A value or the error that explains why there is none; nothing in this module throws. */
export type CodingAgentResult<Value> =
  | { ok: true; value: Value }
  | { ok: false; error: BatchSpecError };

/**
 * Where the agent is installed from, decided per run:
 * - `release`: a release download; `baseUrl` is the prefix the agent's release assets hang off,
 *   the vendor's or a mirror's, `http(s)://` or `file://` (a directory of the same layout);
 * - `npm`: the npm package, from `registry` when given, else npm's configured registry;
 * - `installed`: a binary already on the machine or in the image, at `path`, or found on `PATH`
 *   when no path is given; nothing is downloaded, its version is still checked.
 */
export type InstallSource =
  | { kind: "release"; baseUrl: string }
  | { kind: "npm"; registry?: string }
  | { kind: "installed"; path?: string };

/** The install sources that download the agent. */
export type DownloadSource = Exclude<InstallSource, { kind: "installed" }>;

export interface AgentInstallContext {
  version: string;
  platform: ResolvedPlatform;
  source: InstallSource;
}

/** An install context whose source downloads the agent: what `install` is given. */
export interface AgentDownloadContext extends AgentInstallContext {
  source: DownloadSource;
}

/**
 * Shell lines that put the agent into `"$deckhand_stage"`, a fresh empty directory from
 * `mktemp -d` inside the install directory. The renderer verifies the result and moves it into
 * place; the lines must only write inside the stage and call `deckhand_fail` with a message on
 * failure.
 */
export interface AgentInstallPlan {
  lines: readonly string[];
  /** The executable, relative to the stage, e.g. `package/codex`. */
  entry: string;
  /** Where it comes from (a URL or an npm spec), for messages. */
  origin: string;
}

export interface AgentRunContext {
  prompt: string;
  model: string;
  version: string;
  /** `<model-provider-url>/<agent-type>`: the proxy route this agent type talks to. */
  baseUrl: string;
}

export interface AgentEnvironmentAssignment {
  name: string;
  value: readonly ShellValuePart[];
}

/**
 * The job's own agent state directory as a shell value: a directory the script makes for this
 * step alone, for the agent's configuration, caches and databases, so two jobs' agents never
 * share (and race on) state under the runner's HOME.
 */
export const AGENT_STATE_DIRECTORY: ShellValuePart = { env: "deckhand_state" };

/** A file the script writes into the state directory before the agent starts. */
export interface AgentStateFile {
  /** Relative to the state directory, e.g. `.gemini/settings.json`. */
  path: string;
  content: string;
}

/** How the agent is run: environment set just before, and its arguments (literal strings). */
export interface AgentRunPlan {
  /** Variables removed first, so a credential from the image cannot reach the proxy or beyond. */
  unset: readonly string[];
  environment: readonly AgentEnvironmentAssignment[];
  arguments: readonly string[];
  /** Files written into the state directory (settings the agent reads from its home). */
  stateFiles?: readonly AgentStateFile[];
}

/** One agent type: everything needed to install, check and run it non-interactively. */
export interface AgentTypeDefinition {
  /** The `codingAgent.type` value, also the last segment of the model-provider URL. */
  readonly type: string;
  readonly displayName: string;
  /** The executable's name once installed. */
  readonly binary: string;
  readonly supportedPlatforms: readonly PlatformName[];
  /** Where official releases live; a suggestion for callers, never used by a render on its own. */
  readonly defaultReleaseBaseUrl: string;
  readonly npmPackage: string;
  /**
   * Every binary the install and the run need from the image, beyond the shell's builtins and
   * the agent itself (for an `installed` source, only what the run needs).
   */
  requiredBinaries(context: AgentInstallContext): readonly string[];
  install(context: AgentDownloadContext): AgentInstallPlan;
  /** The exact line `<binary> --version` prints for this version. */
  expectedVersionOutput(version: string): string;
  run(context: AgentRunContext): AgentRunPlan;
}
