import type { BatchSpecError } from "../batch-spec-error.ts";
import type { PlatformName, ResolvedPlatform } from "./platform.ts";
import type { ShellValuePart } from "./shell-quote.ts";

/** A value or the error that explains why there is none; nothing in this module throws. */
export type CodingAgentResult<Value> =
  | { ok: true; value: Value }
  | { ok: false; error: BatchSpecError };

/**
 * Where the agent is installed from, decided per run: a release download (`baseUrl` is the
 * prefix the agent's release assets hang off, e.g. a mirror on the local network), or the npm
 * package (from `registry` when given, else npm's configured registry).
 */
export type InstallSource =
  | { kind: "release"; baseUrl: string }
  | { kind: "npm"; registry?: string };

export interface AgentInstallContext {
  version: string;
  platform: ResolvedPlatform;
  source: InstallSource;
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

/** How the agent is run: environment set just before, and its arguments (literal strings). */
export interface AgentRunPlan {
  /** Variables removed first, so a credential from the image cannot reach the proxy or beyond. */
  unset: readonly string[];
  environment: readonly AgentEnvironmentAssignment[];
  arguments: readonly string[];
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
  /** Every binary the install and the run need from the image, beyond the shell's builtins. */
  requiredBinaries(context: AgentInstallContext): readonly string[];
  install(context: AgentInstallContext): AgentInstallPlan;
  /** The exact line `<binary> --version` prints for this version. */
  expectedVersionOutput(version: string): string;
  run(context: AgentRunContext): AgentRunPlan;
}
