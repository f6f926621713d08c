import { fileURLToPath } from "node:url";
import type { ScriptedAgentMode } from "./scripted-acp-options.ts";

export interface ScriptedAcpAgentCommandOptions {
  /** Delay before the commands notification, overriding the mode's default. */
  commandsDelayMs?: number;
  /** The version the agent reports. */
  agentVersion?: string;
  /** Keep session histories here so a later agent process can `session/load` them. */
  stateDir?: string;
  /** Do not advertise `loadSession` (an agent that cannot resume). */
  noLoad?: boolean;
  /** Advertise `sessionCapabilities.resume` and serve `session/resume` (no history replayed). */
  resume?: boolean;
  /** Refuse `--version`, as codex-acp does. */
  noVersion?: boolean;
  /** Take this long to answer `initialize`. */
  initializeDelayMs?: number;
  /** Take this long to answer `session/new`. */
  sessionDelayMs?: number;
}

/** Where the agent script lives, for tests that need the file itself. */
export const scriptedAcpAgentPath = fileURLToPath(
  new URL("./scripted-acp-agent.ts", import.meta.url),
);

/**
 * The command line that starts the scripted ACP agent: this Node with the `source` condition
 * (so the workspace packages resolve to their TypeScript) and type stripping, then the script
 * and its options. Use it as a custom provider's `command`.
 */
export function scriptedAcpAgentCommand(
  mode: ScriptedAgentMode = "normal",
  options: ScriptedAcpAgentCommandOptions = {},
): string[] {
  const command = [process.execPath, "--conditions=source", scriptedAcpAgentPath, "--mode", mode];
  if (options.commandsDelayMs !== undefined) {
    command.push("--commands-delay-ms", String(options.commandsDelayMs));
  }
  if (options.agentVersion !== undefined) command.push("--agent-version", options.agentVersion);
  if (options.stateDir !== undefined) command.push("--state-dir", options.stateDir);
  if (options.noLoad === true) command.push("--no-load");
  if (options.resume === true) command.push("--resume");
  if (options.noVersion === true) command.push("--no-version");
  if (options.initializeDelayMs !== undefined) {
    command.push("--initialize-delay-ms", String(options.initializeDelayMs));
  }
  if (options.sessionDelayMs !== undefined) {
    command.push("--session-delay-ms", String(options.sessionDelayMs));
  }
  return command;
}
