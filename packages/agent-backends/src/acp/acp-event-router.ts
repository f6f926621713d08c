import type * as acp from "@agentclientprotocol/sdk";
import type { AgentEvent } from "@deckhand/wire";
import { eventsFromUpdate, type UpdateContext } from "./acp-events.ts";
import type { AcpBackendLogger, AcpRedaction } from "./acp-redaction.ts";
import type { AcpTurn } from "./acp-turn.ts";

/** What the router needs of the agent's open session: its id, and its mode to keep current. */
export interface RoutedSession {
  readonly sessionId: string | null;
  modeId: string | null;
}

export interface AcpEventRouterOptions {
  agent: string;
  worktreePath: string;
  redaction: AcpRedaction;
  logger: AcpBackendLogger;
  /** Where `commands` and `mode` events go between turns. */
  onIdleEvent: ((event: AgentEvent) => void) | undefined;
  /** The agent's live session, if it has one. */
  session: () => RoutedSession | null;
}

/**
 * Where what an agent reports goes: `session/update`s become events (see acp-events.ts), and
 * every event, redacted, goes to the running turn, or between turns to `onIdleEvent` when it is
 * agent state (`commands`, `mode`). Updates of a session being loaded replay its history, which
 * is no turn's news.
 */
export class AcpEventRouter {
  /** The running turn; null between turns. */
  turn: AcpTurn | null = null;
  /** While a session is being loaded, its replayed history is not this turn's news. */
  loadingSessionId: string | null = null;
  readonly #options: AcpEventRouterOptions;

  constructor(options: AcpEventRouterOptions) {
    this.#options = options;
  }

  emit(raw: AgentEvent): void {
    // The one way out for what the agent reports: whatever it saw (a tool's output holding a
    // key) is redacted before anyone stores, streams or records it.
    const event = this.#options.redaction.value(raw);
    const current = this.turn;
    if (current === null) {
      if (event.type === "commands" || event.type === "mode") this.#options.onIdleEvent?.(event);
      return;
    }
    current.deliver(event);
  }

  /** How events of the turn of `messageId` name it, the agent and the worktree. */
  context(messageId: string): UpdateContext {
    return { messageId, agent: this.#options.agent, worktreePath: this.#options.worktreePath };
  }

  onUpdate(notification: acp.SessionNotification): void {
    const { update } = notification;
    const live = this.#options.session();
    // The agent may change its mode itself; a turn that asks for another must still switch.
    if (
      update.sessionUpdate === "current_mode_update" &&
      live !== null &&
      notification.sessionId === live.sessionId
    ) {
      live.modeId = update.currentModeId;
    }
    const state =
      update.sessionUpdate === "available_commands_update" ||
      update.sessionUpdate === "current_mode_update";
    const current = this.turn;
    if (notification.sessionId === this.loadingSessionId) {
      // Replayed history is not this turn's news; only the agent's commands and mode still are.
      if (state) {
        for (const event of eventsFromUpdate(update, this.context("")))
          this.#options.onIdleEvent?.(event);
      }
      return;
    }
    if (live?.sessionId == null || notification.sessionId !== live.sessionId) {
      // Commands may arrive before the session/new answer is processed; they are state.
      if (state) for (const event of eventsFromUpdate(update, this.context(""))) this.emit(event);
      return;
    }
    for (const event of eventsFromUpdate(update, this.context(current?.messageId ?? ""))) {
      if (current === null && !state) {
        this.#options.logger.info("the agent sent an update outside a turn; dropped", {
          update: update.sessionUpdate,
        });
        continue;
      }
      if (current !== null && event.type === "text") {
        current.text += this.#options.redaction.text(event.delta);
      }
      if (current !== null && event.type === "tool_call") current.announced.add(event.tool_call_id);
      this.emit(event);
    }
  }
}
