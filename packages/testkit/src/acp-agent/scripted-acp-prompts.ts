/**
 * What a prompt asks the scripted agent to do. A prompt's text is a directive: its first word
 * names the behaviour, the rest are its arguments. Tests build prompts with `scriptedPrompt`, so
 * the syntax lives in one place:
 *
 * - `write <path> <text...>`: writes `<text>` through `fs/write_text_file` (a relative path is
 *   resolved against the session's cwd; an absolute one is sent as is, so a test can aim outside
 *   the worktree); replies `wrote <path>` or `error: <message>`.
 * - `write-as-gemini <path> <text...>`: writes as Gemini CLI's `write_file` does (see
 *   scripted-gemini-write.ts): reads the file first, through `fs/read_text_file` when the client
 *   advertised it (any error but one Gemini's bundled SDK lets it recognise as a missing file
 *   fails the tool) or from disk otherwise, then writes through `fs/write_text_file`; replies
 *   `wrote <path> (new file)`, `wrote <path> (changed)` or `error: <message>`.
 * - `read <path> [line] [limit]`: reads through `fs/read_text_file`; replies with the content.
 * - `run [--limit N] <shell command...>`: runs `sh -c <command>` in a client terminal
 *   (`terminal/create` with `outputByteLimit` N, `wait_for_exit`, `output`, `release`); replies
 *   `exit <code> truncated <bool>` and the output on the next lines.
 * - `run-kill <shell command...>`: starts the command, kills it after 200 ms with
 *   `terminal/kill`, then reports as `run` does (the exit status names the signal).
 * - `run-release <shell command...>`: starts the command and releases the terminal at once,
 *   leaving the client to stop it; replies with the terminal id.
 * - `edit <path> <text...>`: announces an edit tool call, asks `session/request_permission`
 *   (allow_once, allow_always, reject_once, reject_always), writes the file when allowed and
 *   replies `edited <path>`, replies `rejected` when rejected, and ends the turn `cancelled`
 *   when the request was cancelled.
 * - `edit-ask-first <path> <text...>`: like `edit`, but asks permission for the tool call before
 *   announcing it, and announces it once answered (codex-acp does so for commands).
 * - `edit-ask-only <path> <text...>`: like `edit`, but the permission request is the call's only
 *   announcement; after it come `tool_call_update`s (Gemini CLI does so for every tool it asks
 *   about).
 * - `slow [ms]`: streams a chunk every 50 ms for `ms` (default 30 s) or until `session/cancel`,
 *   which ends the turn `cancelled`.
 * - `stubborn [ms]`: like `slow`, but ignores `session/cancel` (a client must stop the process).
 * - `crash`: streams a chunk, writes to stderr and exits with code 7 mid-turn.
 * - `showcase`: one of each update (thought, plan, tool call and two updates, mode change,
 *   text) and token usage in the prompt response.
 * - `history`: replies with the session's earlier prompts, one per line after `history N`, so a
 *   test can tell a resumed session (which remembers) from a new one.
 * - `env`: replies with the agent process's own environment, one `NAME=value` per line, so a
 *   test can check what an agent inherits.
 * - `exec <shell command...>`: runs `sh -c <command>` in the agent's own process, as agents that
 *   run their tools themselves do (Claude Code, Codex), and replies `exit <code>` and the
 *   command's output on the next lines, so a test can see what the agent process can reach.
 * - `settings`: replies `mode <id> model <id>`: the session's mode and model as `session/set_mode`
 *   and `session/set_config_option` last set them, so a test can see a choice arrive.
 * - anything else: replies with the script's fixed reply.
 */
export type ScriptedPrompt =
  | { kind: "write" | "write-as-gemini"; path: string; text: string }
  | { kind: "read"; path: string; line: number | null; limit: number | null }
  | { kind: "run"; command: string; limit: number | null }
  | { kind: "run-kill"; command: string }
  | { kind: "run-release"; command: string }
  | { kind: "exec"; command: string }
  | { kind: "edit" | "edit-ask-first" | "edit-ask-only"; path: string; text: string }
  | { kind: "slow"; ms: number }
  | { kind: "stubborn"; ms: number }
  | { kind: "crash" }
  | { kind: "showcase" }
  | { kind: "history" }
  | { kind: "env" }
  | { kind: "settings" }
  | { kind: "reply" };

/** How long `slow` and `stubborn` stream when no duration is given. */
export const SCRIPTED_SLOW_DEFAULT_MS = 30_000;

function rest(text: string, words: number): string {
  let remaining = text.trimStart();
  for (let index = 0; index < words; index += 1) {
    remaining = remaining.replace(/^\S+\s?/, "");
  }
  return remaining;
}

function optionalNumber(word: string | undefined): number | null {
  return word !== undefined && /^\d+$/.test(word) ? Number(word) : null;
}

/** Reads a prompt's text as a directive; unknown text is a plain `reply`. */
export function parseScriptedPrompt(text: string): ScriptedPrompt {
  const words = text.trim().split(/\s+/);
  const [verb, first, second, third] = words;
  switch (verb) {
    case "write":
    case "write-as-gemini":
    case "edit":
    case "edit-ask-first":
    case "edit-ask-only":
      if (first === undefined) return { kind: "reply" };
      return { kind: verb, path: first, text: rest(text, 2) };
    case "read":
      if (first === undefined) return { kind: "reply" };
      return {
        kind: "read",
        path: first,
        line: optionalNumber(second),
        limit: optionalNumber(third),
      };
    case "run":
      if (first === "--limit" && optionalNumber(second) !== null) {
        return { kind: "run", command: rest(text, 3), limit: optionalNumber(second) };
      }
      return { kind: "run", command: rest(text, 1), limit: null };
    case "run-kill":
    case "run-release":
    case "exec":
      return { kind: verb, command: rest(text, 1) };
    case "slow":
    case "stubborn":
      return { kind: verb, ms: optionalNumber(first) ?? SCRIPTED_SLOW_DEFAULT_MS };
    case "crash":
      return { kind: "crash" };
    case "showcase":
      return { kind: "showcase" };
    case "history":
      return { kind: "history" };
    case "env":
      return { kind: "env" };
    case "settings":
      return { kind: "settings" };
    default:
      return { kind: "reply" };
  }
}

/** The prompt text for a directive; the inverse of `parseScriptedPrompt`. */
export function scriptedPrompt(prompt: ScriptedPrompt): string {
  switch (prompt.kind) {
    case "write":
    case "write-as-gemini":
    case "edit":
    case "edit-ask-first":
    case "edit-ask-only":
      return `${prompt.kind} ${prompt.path} ${prompt.text}`;
    case "read":
      return [
        "read",
        prompt.path,
        prompt.line ?? (prompt.limit === null ? "" : 1),
        prompt.limit ?? "",
      ]
        .join(" ")
        .trim();
    case "run":
      return prompt.limit === null
        ? `run ${prompt.command}`
        : `run --limit ${prompt.limit} ${prompt.command}`;
    case "run-kill":
    case "run-release":
    case "exec":
      return `${prompt.kind} ${prompt.command}`;
    case "slow":
    case "stubborn":
      return `${prompt.kind} ${prompt.ms}`;
    case "crash":
    case "showcase":
    case "history":
    case "env":
    case "settings":
      return prompt.kind;
    case "reply":
      return "hello";
  }
}
