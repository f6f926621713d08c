import { randomUUID } from "node:crypto";
import type * as acp from "@agentclientprotocol/sdk";
import type { AgentEvent, PermissionOptionKind } from "@deckhand/wire";
import type { PermissionAnswer } from "../backend.ts";
import { AgentBackendError } from "../errors.ts";
import { decidePermission } from "../permission-gate.ts";
import type { AcpToolKind, PermissionMemory } from "../permission-memory.ts";
import type { AcpEventRouter } from "./acp-event-router.ts";
import { toolCallFromPermission } from "./acp-events.ts";
import type { AcpBackendLogger } from "./acp-redaction.ts";

type PermissionOutcome = PermissionOptionKind | "cancelled";

/** A `kind` the user chose, or the closest option the agent offers with the same meaning. */
function chooseOption(
  options: readonly acp.PermissionOption[],
  kind: PermissionOptionKind,
): acp.PermissionOption | null {
  const exact = options.find((option) => option.kind === kind);
  if (exact) return exact;
  const allow = kind.startsWith("allow");
  return options.find((option) => option.kind.startsWith(allow ? "allow" : "reject")) ?? null;
}

function cancelled(): acp.RequestPermissionResponse {
  return { outcome: { outcome: "cancelled" } };
}

export interface AcpPermissionsOptions {
  /** Deckhand's session: "always" answers are remembered per session, agent and tool kind. */
  sessionId: string;
  agent: string;
  memory: PermissionMemory;
  logger: AcpBackendLogger;
  /** Where requests and answers go out, and which turn is running. */
  events: AcpEventRouter;
}

/**
 * The agent's `session/request_permission`s: each becomes a `permission_request` event that
 * waits for the user's answer, unless an "always" answer is remembered (the UI still sees the
 * request and its answer). Outside a turn, or once it is being cancelled, they are cancelled.
 */
export class AcpPermissions {
  readonly #pending = new Map<string, (outcome: PermissionOutcome) => void>();
  readonly #options: AcpPermissionsOptions;

  constructor(options: AcpPermissionsOptions) {
    this.#options = options;
  }

  async request(params: acp.RequestPermissionRequest): Promise<acp.RequestPermissionResponse> {
    const { agent, events } = this.#options;
    const current = events.turn;
    if (current === null || current.cancelRequested) return cancelled();
    const toolKind: AcpToolKind = params.toolCall.kind ?? "other";
    // Asked about a call it has not announced: the request's own fields announce it.
    if (!current.announced.has(params.toolCall.toolCallId)) {
      current.announced.add(params.toolCall.toolCallId);
      events.emit(toolCallFromPermission(params.toolCall, events.context(current.messageId)));
    }
    const requestId = randomUUID();
    const request: AgentEvent = {
      type: "permission_request",
      message_id: current.messageId,
      request_id: requestId,
      tool_call_id: params.toolCall.toolCallId ?? null,
      title: params.toolCall.title ?? `${agent} asks to use a ${toolKind} tool`,
      options: params.options.map((option) => ({
        option_id: option.optionId,
        name: option.name,
        kind: option.kind,
      })),
    };
    let shown = false;
    const { outcome, remembered } = await decidePermission({
      memory: this.#options.memory,
      key: { sessionId: this.#options.sessionId, agent, toolKind },
      logger: this.#options.logger,
      usable: (answer) => chooseOption(params.options, answer) !== null,
      ask: () => {
        // Cancelled while the memory was read: nothing is shown, nothing to resolve.
        if (current.cancelRequested || events.turn !== current) {
          return Promise.resolve("cancelled");
        }
        // Pending before the event goes out, so an answer given while it is delivered finds it.
        const answered = new Promise<PermissionOutcome>((resolve) =>
          this.#pending.set(requestId, resolve),
        );
        events.emit(request);
        shown = true;
        return answered;
      },
    });
    // Answered without asking, but the UI still sees the request and its answer.
    if (remembered) events.emit(request);
    else if (!shown) return cancelled();
    const option = outcome === "cancelled" ? null : chooseOption(params.options, outcome);
    events.emit({
      type: "permission_resolved",
      message_id: current.messageId,
      request_id: requestId,
      outcome: option === null ? "cancelled" : outcome,
    });
    if (option === null) return cancelled();
    return { outcome: { outcome: "selected", optionId: option.optionId } };
  }

  /** The user's answer to a pending request. */
  respond(answer: PermissionAnswer): void {
    const resolve = this.#pending.get(answer.requestId);
    if (!resolve) {
      throw new AgentBackendError(
        "unknown_permission_request",
        `permission request ${answer.requestId} is not pending; it was answered or cancelled already`,
      );
    }
    this.#pending.delete(answer.requestId);
    resolve(answer.outcome);
  }

  /** Answers every pending request with `cancelled`, as ACP asks when a turn is cancelled. */
  cancelAll(): void {
    const pending = [...this.#pending.values()];
    this.#pending.clear();
    for (const resolve of pending) resolve("cancelled");
  }
}
