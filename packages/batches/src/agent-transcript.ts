// A `codingAgent` step's transcript: the agents run with JSON-lines output (codex `exec --json`,
// claude-code and gemini `--output-format=stream-json`), so the step's stdout already holds the
// agent's messages, tool calls and token usage. This reads them back for the run screen; lines
// that are not JSON (the install's progress, say) are skipped.
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

/** A codex `item.*` event's item as an entry; null for items not worth a line. */
function codexItem(item: Json): AgentTranscriptEntry | null {
  switch (item.type) {
    case "agent_message":
      return { kind: "message", text: text(item.text), detail: null };
    case "reasoning":
      return { kind: "reasoning", text: text(item.text), detail: null };
    case "command_execution":
      return {
        kind: "tool_call",
        text: text(item.command),
        detail:
          [
            item.exit_code === undefined || item.exit_code === null
              ? ""
              : `exit ${text(item.exit_code)}`,
            text(item.aggregated_output),
          ]
            .filter((part) => part !== "")
            .join("\n") || null,
      };
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
        detail: item.result === undefined ? null : text(item.result),
      };
    case "web_search":
      return { kind: "tool_call", text: `search ${text(item.query)}`, detail: null };
    case "error":
      return { kind: "error", text: text(item.message), detail: null };
    default:
      return null;
  }
}

/** Claude-style content blocks (claude-code's assistant and user messages). */
function contentBlocks(content: unknown, entries: AgentTranscriptEntry[]): void {
  if (typeof content === "string") {
    entries.push({ kind: "message", text: content, detail: null });
    return;
  }
  if (!Array.isArray(content)) return;
  for (const block of content.filter(isObject)) {
    if (block.type === "text")
      entries.push({ kind: "message", text: text(block.text), detail: null });
    else if (block.type === "thinking")
      entries.push({ kind: "reasoning", text: text(block.thinking), detail: null });
    else if (block.type === "tool_use")
      entries.push({ kind: "tool_call", text: text(block.name), detail: text(block.input) });
    else if (block.type === "tool_result")
      entries.push({ kind: "tool_result", text: text(block.content), detail: null });
  }
}

/** The transcript of an agent of `type` from its step's stdout. */
export function parseAgentTranscript(type: string, stdout: string): AgentStepTranscript {
  // An acp step's stdout holds Deckhand's own events, not a CLI's.
  if (type === ACP_AGENT_TYPE) return acpTranscript(type, stdout);
  const entries: AgentTranscriptEntry[] = [];
  let usage: Usage | null = null;
  const addUsage = (reported: Json) => {
    usage = {
      input_tokens: (usage?.input_tokens ?? 0) + count(reported.input_tokens),
      cached_input_tokens:
        (usage?.cached_input_tokens ?? 0) +
        count(reported.cached_input_tokens ?? reported.cache_read_input_tokens),
      output_tokens: (usage?.output_tokens ?? 0) + count(reported.output_tokens),
    };
  };
  for (const line of stdout.split("\n")) {
    const trimmed = line.trim();
    if (!trimmed.startsWith("{")) continue;
    let event: unknown;
    try {
      event = JSON.parse(trimmed);
    } catch {
      continue;
    }
    if (!isObject(event)) continue;
    // codex
    if (event.type === "item.completed" && isObject(event.item)) {
      const entry = codexItem(event.item);
      if (entry !== null) entries.push(entry);
    } else if (event.type === "turn.completed" && isObject(event.usage)) {
      addUsage(event.usage);
    } else if (event.type === "turn.failed" && isObject(event.error)) {
      entries.push({ kind: "error", text: text(event.error.message), detail: null });
    } else if (event.type === "error" && "message" in event) {
      entries.push({ kind: "error", text: text(event.message), detail: null });
    }
    // claude-code
    else if ((event.type === "assistant" || event.type === "user") && isObject(event.message)) {
      contentBlocks(event.message.content, entries);
    } else if (event.type === "result" && isObject(event.usage)) {
      addUsage(event.usage);
    }
    // gemini
    else if (event.type === "message" && event.role === "assistant") {
      entries.push({ kind: "message", text: text(event.content), detail: null });
    } else if (event.type === "tool_use") {
      entries.push({
        kind: "tool_call",
        text: text(event.tool_name),
        detail: event.parameters === undefined ? null : text(event.parameters),
      });
    } else if (event.type === "tool_result") {
      entries.push({ kind: "tool_result", text: text(event.output ?? event.status), detail: null });
    }
  }
  return { type, entries, usage };
}
