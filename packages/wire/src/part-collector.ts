import type { CollectedPart, ToolCallPermission } from "./message-parts.ts";
import type { AgentEvent } from "./session-stream.ts";

export type { CollectedPart } from "./message-parts.ts";

/**
 * The fold from a turn's agent events to the parts of the message that answers it: the server
 * stores what it yields, and a client can rebuild a streaming message the same way from the
 * events it receives. Pure: no I/O, and nothing is redacted or stored here.
 */

type TextPart = Extract<CollectedPart, { kind: "text" | "reasoning" }>;
type ToolCallPart = Extract<CollectedPart, { kind: "tool_call" }>;
type PlanPart = Extract<CollectedPart, { kind: "plan" }>;

/** What changed in the parts since they were last taken. */
export interface PartChanges {
  /** Parts from this position on are gone (a retry discarded them). */
  truncateFrom: number | null;
  /** Parts to store whole, at their position. */
  put: { position: number; part: CollectedPart }[];
}

/** A permission request as stored in its tool call's part; `part` is null until announced. */
interface AskedPermission {
  permission: ToolCallPermission;
  part: ToolCallPart | null;
}

/**
 * Turns a turn's events into the assistant message's parts, in the order they first appeared:
 * text, reasoning, tool calls (each with its updates and the permission asked for it merged),
 * the plan, and errors. It remembers which parts changed since `takeChanges`, so they can be
 * stored as the turn streams.
 *
 * A tool call's part ends the same whatever the order of its announcement and its permission:
 * agents may ask permission for a call they announce only afterwards (codex-acp does so for
 * commands), so a permission for a call not yet seen waits, answer included, for its part.
 */
export class PartCollector {
  readonly parts: CollectedPart[] = [];
  readonly #toolCalls = new Map<string, ToolCallPart>();
  /** Each permission asked about a tool call, by request id, and the part it is merged into. */
  readonly #permissions = new Map<string, AskedPermission>();
  /** Permissions asked about a tool call not announced yet, by tool call id. */
  readonly #unannounced = new Map<string, AskedPermission>();
  #open: TextPart | null = null;
  #plan: PlanPart | null = null;
  /** Text and reasoning parts begun since the last event of another type (a suffix of parts). */
  #sinceOther: CollectedPart[] = [];
  readonly #dirty = new Set<CollectedPart>();
  #truncateFrom: number | null = null;
  /** The last error an agent reported, for the message's `error` column. */
  lastError: string | null = null;

  #push(part: CollectedPart): void {
    this.parts.push(part);
    this.#dirty.add(part);
  }

  /** A tool call's first part, with the permission asked about it before it was announced. */
  #announce(toolCallId: string, part: ToolCallPart): ToolCallPart {
    this.#toolCalls.set(toolCallId, part);
    this.#push(part);
    const asked = this.#unannounced.get(toolCallId);
    if (asked) {
      this.#unannounced.delete(toolCallId);
      this.#attach(asked, part);
    }
    return part;
  }

  #attach(asked: AskedPermission, part: ToolCallPart): void {
    asked.part = part;
    part.content.permission = asked.permission;
    this.#dirty.add(part);
  }

  /** What changed since the last call (everything, the first time). */
  takeChanges(): PartChanges {
    const changes: PartChanges = {
      truncateFrom: this.#truncateFrom,
      put: [...this.#dirty]
        .map((part) => ({ position: this.parts.indexOf(part), part }))
        .filter((change) => change.position >= 0)
        .sort((left, right) => left.position - right.position),
    };
    this.#dirty.clear();
    this.#truncateFrom = null;
    return changes;
  }

  add(event: AgentEvent): void {
    if (event.type === "text" || event.type === "reasoning") {
      let open = this.#open;
      if (open === null || open.kind !== event.type) {
        const begun: TextPart = { kind: event.type, content: { text: "" } };
        open = begun;
        this.#open = begun;
        this.#push(begun);
        this.#sinceOther.push(begun);
      }
      open.content.text += event.delta;
      this.#dirty.add(open);
      return;
    }
    if (event.type === "retry") {
      // The stream's rule: a retry discards the text and reasoning since the last other event.
      const first = this.#sinceOther[0];
      this.#sinceOther = [];
      this.#open = null;
      if (first === undefined) return;
      const from = this.parts.indexOf(first);
      this.parts.splice(from);
      this.#truncateFrom = Math.min(this.#truncateFrom ?? from, from);
      return;
    }
    this.#sinceOther = [];
    if (event.type === "tool_call") {
      this.#open = null;
      const { type: _type, message_id: _message, ...content } = event;
      const existing = this.#toolCalls.get(event.tool_call_id);
      if (existing) {
        Object.assign(existing.content, content);
        this.#dirty.add(existing);
        return;
      }
      this.#announce(event.tool_call_id, { kind: "tool_call", content: { ...content } });
      return;
    }
    if (event.type === "tool_update") {
      this.#open = null;
      let part = this.#toolCalls.get(event.tool_call_id);
      part ??= this.#announce(event.tool_call_id, {
        kind: "tool_call",
        content: { tool_call_id: event.tool_call_id },
      });
      // An update carries only what changed: a field it leaves out keeps its value.
      if (event.status !== undefined) part.content.status = event.status;
      if (event.title !== undefined) part.content.title = event.title;
      if (event.content !== undefined) part.content.content = event.content;
      if (event.output !== undefined) part.content.output = event.output;
      this.#dirty.add(part);
      return;
    }
    if (event.type === "permission_request") {
      this.#open = null;
      // A request about a tool call is part of that call; one about nothing in particular is
      // only in the session's event log.
      if (event.tool_call_id === null) return;
      const asked: AskedPermission = {
        permission: {
          request_id: event.request_id,
          title: event.title,
          options: event.options,
          outcome: null,
        },
        part: null,
      };
      this.#permissions.set(event.request_id, asked);
      const part = this.#toolCalls.get(event.tool_call_id);
      if (part) this.#attach(asked, part);
      else this.#unannounced.set(event.tool_call_id, asked);
      return;
    }
    if (event.type === "permission_resolved") {
      const asked = this.#permissions.get(event.request_id);
      if (!asked) return;
      asked.permission.outcome = event.outcome;
      if (asked.part) this.#dirty.add(asked.part);
      return;
    }
    if (event.type === "plan") {
      this.#open = null;
      if (this.#plan) {
        this.#plan.content.entries = event.entries;
        this.#dirty.add(this.#plan);
        return;
      }
      this.#plan = { kind: "plan", content: { entries: event.entries } };
      this.#push(this.#plan);
      return;
    }
    if (event.type === "error") {
      this.#open = null;
      this.lastError = event.message;
      this.#push({
        kind: "error",
        content: {
          message: event.message,
          ...(event.stderr_tail ? { stderr_tail: event.stderr_tail } : {}),
        },
      });
    }
  }
}

/** The parts a complete list of one message's events makes. */
export function collectParts(events: Iterable<AgentEvent>): CollectedPart[] {
  const collector = new PartCollector();
  for (const event of events) collector.add(event);
  return collector.parts;
}
