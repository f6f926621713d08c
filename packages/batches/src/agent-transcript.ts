// A `codingAgent` step's transcript: the agents run with JSON-lines output (codex `exec --json`,
// claude-code and gemini `--output-format=stream-json`, opencode `run --format=json`), so the
// step's stdout already holds the agent's messages, tool calls and token usage. This reads them
// back for the run screen, with one reader per agent type since their events differ; lines that
// are not JSON (the install's progress, say) are skipped.
import { ACP_AGENT_TYPE } from "@deckhand/batch-spec";
import type { AgentStepTranscript, AgentTranscriptEntry } from "@deckhand/wire";
import { acpTranscript } from "./acp-transcript.ts";

type Usage = NonNullable<AgentStepTranscript["usage"]>;
type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json =>
  typeof value === "object" && value !== null && !Array.isArray(value);
const text = (value: unknown): string =>
  typeof value === "string" ? value : value === undefined ? "" : JSON.stringify(value);
const count = (value: unknown): number =>
  typeof value === "number" && Number.isFinite(value) && value >= 0 ? Math.round(value) : 0;
const joined = (...parts: string[]): string | null =>
  parts.filter((part) => part !== "").join("\n") || null;

/** What a reader builds up: entries in order, and the usage summed over the agent's reports. */
class Transcript {
  readonly entries: AgentTranscriptEntry[] = [];
  usage: Usage | null = null;

  push(kind: AgentTranscriptEntry["kind"], entryText: string, detail: string | null = null): void {
    this.entries.push({ kind, text: entryText, detail });
  }

  addUsage(input: number, cached: number, output: number): void {
    this.usage = {
      input_tokens: (this.usage?.input_tokens ?? 0) + input,
      cached_input_tokens: (this.usage?.cached_input_tokens ?? 0) + cached,
      output_tokens: (this.usage?.output_tokens ?? 0) + output,
    };
  }
}

type Reader = (event: Json, transcript: Transcript) => void;

/** A codex item (`item.started`, `item.updated`, `item.completed`) as an entry; null to skip. */
function codexItem(item: Json): AgentTranscriptEntry | null {
  switch (item.type) {
    case "agent_message":
      return { kind: "message", text: text(item.text), detail: null };
    case "reasoning":
      return { kind: "reasoning", text: text(item.text), detail: null };
    case "command_execution": {
      const exit =
        item.exit_code === undefined || item.exit_code === null
          ? item.status === "in_progress"
            ? "running"
            : ""
          : `exit ${text(item.exit_code)}`;
      return {
        kind: "tool_call",
        text: text(item.command),
        detail: joined(exit, text(item.aggregated_output)),
      };
    }
    case "file_change": {
      const changes = Array.isArray(item.changes) ? item.changes.filter(isObject) : [];
      return {
        kind: "tool_call",
        text: changes.map((change) => `${text(change.kind)} ${text(change.path)}`).join(", "),
        detail: null,
      };
    }
    case "mcp_tool_call":
      return {
        kind: "tool_call",
        text: `${text(item.server)}.${text(item.tool)}`,
        detail:
          item.result !== undefined
            ? text(item.result)
            : isObject(item.error)
              ? text(item.error.message)
              : null,
      };
    case "web_search":
      return { kind: "tool_call", text: `search ${text(item.query)}`, detail: null };
    case "error":
      return { kind: "error", text: text(item.message), detail: null };
    default:
      return null;
  }
}

const CODEX_ITEM_EVENTS = new Set(["item.started", "item.updated", "item.completed"]);

/**
 * Codex's `exec --json` events. An item goes through `item.started`, `item.updated` and
 * `item.completed` under one id, and a command codex never reports completed (the turn was
 * cut short, or the version skips it) is still a command it ran: each item is one entry, placed
 * where it first appeared and showing its latest state.
 */
function codexReader(): Reader {
  const positions = new Map<string, number>();
  return (event, transcript) => {
    if (CODEX_ITEM_EVENTS.has(text(event.type)) && isObject(event.item)) {
      const entry = codexItem(event.item);
      if (entry === null) return;
      const id = typeof event.item.id === "string" ? event.item.id : undefined;
      const position = id === undefined ? undefined : positions.get(id);
      if (position !== undefined) transcript.entries[position] = entry;
      else if (id !== undefined) {
        positions.set(id, transcript.entries.length);
        transcript.entries.push(entry);
      } else if (event.type === "item.completed") transcript.entries.push(entry);
    } else if (event.type === "turn.completed" && isObject(event.usage)) {
      transcript.addUsage(
        count(event.usage.input_tokens),
        count(event.usage.cached_input_tokens),
        count(event.usage.output_tokens),
      );
    } else if (event.type === "turn.failed" && isObject(event.error)) {
      transcript.push("error", text(event.error.message));
    } else if (event.type === "error" && "message" in event) {
      transcript.push("error", text(event.message));
    }
  };
}

/** Claude-style content blocks (claude-code's assistant and user messages). */
function contentBlocks(content: unknown, transcript: Transcript): void {
  if (typeof content === "string") {
    transcript.push("message", content);
    return;
  }
  if (!Array.isArray(content)) return;
  for (const block of content.filter(isObject)) {
    if (block.type === "text") transcript.push("message", text(block.text));
    else if (block.type === "thinking") transcript.push("reasoning", text(block.thinking));
    else if (block.type === "tool_use")
      transcript.push("tool_call", text(block.name), text(block.input));
    else if (block.type === "tool_result") transcript.push("tool_result", text(block.content));
  }
}

/** Claude Code's `stream-json` events; usage from its final `result`. */
function claudeCodeReader(): Reader {
  return (event, transcript) => {
    if ((event.type === "assistant" || event.type === "user") && isObject(event.message)) {
      contentBlocks(event.message.content, transcript);
    } else if (event.type === "result" && isObject(event.usage)) {
      transcript.addUsage(
        count(event.usage.input_tokens),
        count(event.usage.cache_read_input_tokens),
        count(event.usage.output_tokens),
      );
    }
  };
}

/**
 * Gemini CLI's `stream-json` events: the reply comes as `message` deltas (joined into one
 * entry), tools as `tool_use`/`tool_result`, usage in the final `result`'s `stats`.
 */
function geminiReader(): Reader {
  let replying = false;
  return (event, transcript) => {
    const delta = event.type === "message" && event.role === "assistant";
    if (delta && replying && event.delta === true) {
      const last = transcript.entries.at(-1)!;
      last.text += text(event.content);
    } else if (delta) {
      transcript.push("message", text(event.content));
    } else if (event.type === "tool_use") {
      transcript.push(
        "tool_call",
        text(event.tool_name),
        event.parameters === undefined ? null : text(event.parameters),
      );
    } else if (event.type === "tool_result") {
      const error = isObject(event.error) ? text(event.error.message) : "";
      transcript.push("tool_result", text(event.output ?? event.status), joined(error));
    } else if (event.type === "error") {
      transcript.push("error", text(event.message));
    } else if (event.type === "result") {
      if (isObject(event.error)) transcript.push("error", text(event.error.message));
      if (isObject(event.stats)) {
        transcript.addUsage(
          count(event.stats.input_tokens),
          count(event.stats.cached),
          count(event.stats.output_tokens),
        );
      }
    }
    replying = delta;
  };
}

/** An opencode tool part (`{tool, state: {status, input, output, title, error}}`) as an entry. */
function opencodeTool(part: Json): AgentTranscriptEntry {
  const state = isObject(part.state) ? part.state : {};
  const title = text(state.title);
  return {
    kind: "tool_call",
    text: title === "" ? text(part.tool) : `${text(part.tool)} ${title}`,
    detail: joined(
      isObject(state.input) ? text(state.input) : "",
      state.status === "error" ? `error: ${text(state.error)}` : text(state.output),
    ),
  };
}

/**
 * opencode's `run --format=json` events, each `{type, timestamp, sessionID, part}`: `text` and
 * `reasoning` parts once finished, `tool_use` with the tool part in its final state, and
 * `step_finish` with that step's tokens (`cache.read` is apart from `input`).
 */
function opencodeReader(): Reader {
  return (event, transcript) => {
    const part = isObject(event.part) ? event.part : {};
    if (event.type === "text") transcript.push("message", text(part.text));
    else if (event.type === "reasoning") transcript.push("reasoning", text(part.text));
    else if (event.type === "tool_use") transcript.entries.push(opencodeTool(part));
    else if (event.type === "step_finish" && isObject(part.tokens)) {
      const cache = isObject(part.tokens.cache) ? part.tokens.cache : {};
      transcript.addUsage(count(part.tokens.input), count(cache.read), count(part.tokens.output));
    } else if (event.type === "error") {
      const error = isObject(event.error) ? event.error : {};
      const data = isObject(error.data) ? error.data : {};
      transcript.push("error", text(data.message ?? error.message ?? error.name));
    }
  };
}

const READERS: Readonly<Record<string, () => Reader>> = {
  codex: codexReader,
  "claude-code": claudeCodeReader,
  gemini: geminiReader,
  opencode: opencodeReader,
};

/** The transcript of an agent of `type` from its step's stdout; empty for an unknown type. */
export function parseAgentTranscript(type: string, stdout: string): AgentStepTranscript {
  // An acp step's stdout holds Deckhand's own events, not a CLI's.
  if (type === ACP_AGENT_TYPE) return acpTranscript(type, stdout);
  const transcript = new Transcript();
  const read = READERS[type]?.();
  if (read === undefined) return { type, entries: [], usage: null };
  for (const line of stdout.split("\n")) {
    const trimmed = line.trim();
    if (!trimmed.startsWith("{")) continue;
    let event: unknown;
    try {
      event = JSON.parse(trimmed);
    } catch {
      continue;
    }
    if (isObject(event)) read(event, transcript);
  }
  return { type, entries: transcript.entries, usage: transcript.usage };
}
