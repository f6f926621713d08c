// The transcript of an `acp` step: its stdout holds the agent's AgentEvents, one JSON line each
// (what a session streams), and this reads them back as the run screen's entries and usage.
import {
  type AgentEvent,
  AgentEventSchema,
  type AgentStepTranscript,
  type AgentTranscriptEntry,
} from "@deckhand/wire";

type Usage = NonNullable<AgentStepTranscript["usage"]>;

const json = (value: unknown): string | null =>
  value === undefined ? null : JSON.stringify(value);

/** The events of `stdout`, in order; lines that are not AgentEvents are skipped. */
function eventsOf(stdout: string): AgentEvent[] {
  return stdout.split("\n").flatMap((line) => {
    const trimmed = line.trim();
    if (!trimmed.startsWith("{")) return [];
    try {
      const parsed = AgentEventSchema.safeParse(JSON.parse(trimmed));
      return parsed.success ? [parsed.data] : [];
    } catch {
      return [];
    }
  });
}

export function acpTranscript(type: string, stdout: string): AgentStepTranscript {
  const entries: AgentTranscriptEntry[] = [];
  const titles = new Map<string, string>();
  const requests = new Map<string, string>();
  const usage: Usage = { input_tokens: 0, cached_input_tokens: 0, output_tokens: 0 };
  let reported = false;
  /** The message or reasoning entry deltas still go to. */
  const last: { open: AgentTranscriptEntry | null } = { open: null };
  for (const event of eventsOf(stdout)) {
    if (event.type === "text" || event.type === "reasoning") {
      const kind = event.type === "text" ? "message" : "reasoning";
      // Deltas of one message make one entry, until something else happens.
      let open = last.open;
      if (open?.kind !== kind) {
        open = { kind, text: "", detail: null };
        last.open = open;
        entries.push(open);
      }
      open.text += event.delta;
      continue;
    }
    if (event.type === "commands" || event.type === "mode") continue;
    last.open = null;
    switch (event.type) {
      case "tool_call":
        titles.set(event.tool_call_id, event.title);
        entries.push({ kind: "tool_call", text: event.title, detail: json(event.input) });
        break;
      case "tool_update":
        if (event.title !== undefined) titles.set(event.tool_call_id, event.title);
        if (event.status === "completed" || event.status === "failed") {
          entries.push({
            kind: "tool_result",
            text: `${titles.get(event.tool_call_id) ?? event.tool_call_id}: ${event.status}`,
            detail: event.content ?? json(event.output),
          });
        }
        break;
      case "permission_request":
        requests.set(event.request_id, event.title);
        break;
      case "permission_resolved":
        entries.push({
          kind: "tool_result",
          text: `permission ${event.outcome}: ${requests.get(event.request_id) ?? event.request_id}`,
          detail: null,
        });
        break;
      case "usage":
        reported = true;
        usage.input_tokens += event.input_tokens ?? 0;
        usage.output_tokens += event.output_tokens ?? 0;
        break;
      case "error":
        entries.push({ kind: "error", text: event.message, detail: event.stderr_tail ?? null });
        break;
      default:
        break;
    }
  }
  return { type, entries, usage: reported ? usage : null };
}
