import { parseArgs } from "node:util";

/**
 * How the scripted agent behaves:
 * - `normal`: answers initialize and session/new with models and modes, and announces its
 *   slash commands (one of them a skill) shortly after; prompts are scripted by their text
 *   (see `scripted-acp-agent.ts`);
 * - `slow-commands`: like normal, but the commands arrive after `--commands-delay-ms`;
 * - `hang`: never answers initialize;
 * - `crash`: exits with code 3 while handling initialize;
 * - `garbage`: writes a line that is not JSON to stdout before speaking ACP;
 * - `auth-required`: advertises an auth method and refuses session/new with auth_required.
 * - `opencode`: like normal, but its models are opencode's, from `OPENCODE_CONFIG_CONTENT` as
 *   opencode reads it: its own hosted ones (`opencode/big-pickle`, the default) unless
 *   `enabled_providers` leaves them out, then `<provider>/<model>` for every model a provider
 *   declares; the config's `model` is the current one.
 * - `env-auth`: as Qwen Code without a login: advertises one auth method, "Use OpenAI API key"
 *   (`openai`, its description naming the `OPENAI_API_KEY` environment variable), refuses
 *   session/new with auth_required until `authenticate` chose it, and accepts that only when
 *   OPENAI_API_KEY is set in its environment.
 * - `proxy-required`: like normal, but, as codex-acp without a login, refuses session/new with
 *   auth_required unless Deckhand pointed it at the model proxy as it points codex: a
 *   `-c model_providers.<id>.base_url=...` override, and a scoped model token and a job id in
 *   its environment.
 *
 * Independent of the mode: `--state-dir` keeps each session's history in a directory so a later
 * process can `session/load` it (resume across restarts), `--no-load` stops the agent from
 * advertising `loadSession`, as agents without resume do, and `--resume` advertises
 * `sessionCapabilities.resume` and serves `session/resume` (the session continues, its history
 * kept, nothing replayed), as agents that cannot load offer instead. `--initialize-delay-ms` and
 * `--session-delay-ms` make it take that long to answer `initialize` and `session/new`, as agents
 * that install or index before they answer do (opencode, Qwen Code). `-c key=value` overrides
 * (codex's, which Deckhand passes to point codex-acp at its proxy) are accepted, and
 * `--no-version` makes `--version` fail as codex-acp's does.
 */
export const SCRIPTED_AGENT_MODES = [
  "normal",
  "slow-commands",
  "hang",
  "crash",
  "garbage",
  "auth-required",
  "env-auth",
  "opencode",
  "proxy-required",
] as const;
export type ScriptedAgentMode = (typeof SCRIPTED_AGENT_MODES)[number];

export interface ScriptedAgentOptions {
  mode: ScriptedAgentMode;
  /** Delay before the available_commands_update notification. */
  commandsDelayMs: number;
  /** Reported as `agentInfo.version` and by `--version`. */
  version: string;
  /** Where session histories are kept for `session/load`; null keeps them in memory only. */
  stateDir: string | null;
  /** Whether `loadSession` is advertised (and `session/load` served). */
  loadSession: boolean;
  /** Whether `sessionCapabilities.resume` is advertised (and `session/resume` served). */
  resumeSession: boolean;
  /** codex's `-c key=value` overrides, in order. */
  configOverrides: string[];
  /** How long `initialize` takes to answer. */
  initializeDelayMs: number;
  /** How long `session/new` takes to answer. */
  sessionDelayMs: number;
}

export const SCRIPTED_AGENT_VERSION = "1.2.3";

/** Commands arrive this late in `normal` mode; real agents take a few milliseconds too. */
const NORMAL_COMMANDS_DELAY_MS = 20;
/** In `slow-commands` mode, unless `--commands-delay-ms` says otherwise. */
const SLOW_COMMANDS_DELAY_MS = 1_500;

export type ParsedScriptedAgentArguments =
  | { kind: "run"; options: ScriptedAgentOptions }
  | { kind: "version"; version: string }
  | { kind: "version-refused" }
  | { kind: "error"; message: string };

function isMode(value: string): value is ScriptedAgentMode {
  return (SCRIPTED_AGENT_MODES as readonly string[]).includes(value);
}

/**
 * `--mode M [--commands-delay-ms N] [--agent-version V] [--state-dir DIR] [--no-load]
 * [--resume] [--no-version] [--initialize-delay-ms N] [--session-delay-ms N] [-c key=value]... |
 * --version`.
 */
export function parseScriptedAgentArguments(argv: string[]): ParsedScriptedAgentArguments {
  let values: Record<string, string | boolean | string[] | undefined>;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        mode: { type: "string" },
        "commands-delay-ms": { type: "string" },
        "agent-version": { type: "string" },
        "state-dir": { type: "string" },
        "no-load": { type: "boolean" },
        resume: { type: "boolean" },
        version: { type: "boolean" },
        "no-version": { type: "boolean" },
        "initialize-delay-ms": { type: "string" },
        "session-delay-ms": { type: "string" },
        config: { type: "string", short: "c", multiple: true },
      },
      strict: true,
    }));
  } catch (error) {
    return { kind: "error", message: (error as Error).message };
  }
  const version = (values["agent-version"] as string | undefined) ?? SCRIPTED_AGENT_VERSION;
  if (values.version) {
    return values["no-version"] ? { kind: "version-refused" } : { kind: "version", version };
  }
  const mode = (values.mode as string | undefined) ?? "normal";
  if (!isMode(mode)) {
    return {
      kind: "error",
      message: `unknown --mode "${mode}"; use one of ${SCRIPTED_AGENT_MODES.join(", ")}`,
    };
  }
  for (const name of ["commands-delay-ms", "initialize-delay-ms", "session-delay-ms"]) {
    const text = values[name] as string | undefined;
    if (text !== undefined && !/^\d+$/.test(text)) {
      return { kind: "error", message: `--${name} must be a number, got "${text}"` };
    }
  }
  const delayText = values["commands-delay-ms"] as string | undefined;
  const commandsDelayMs =
    delayText !== undefined
      ? Number(delayText)
      : mode === "slow-commands"
        ? SLOW_COMMANDS_DELAY_MS
        : NORMAL_COMMANDS_DELAY_MS;
  return {
    kind: "run",
    options: {
      mode,
      commandsDelayMs,
      version,
      stateDir: (values["state-dir"] as string | undefined) ?? null,
      loadSession: values["no-load"] !== true,
      resumeSession: values.resume === true,
      configOverrides: (values.config as string[] | undefined) ?? [],
      initializeDelayMs: Number(values["initialize-delay-ms"] ?? 0),
      sessionDelayMs: Number(values["session-delay-ms"] ?? 0),
    },
  };
}
