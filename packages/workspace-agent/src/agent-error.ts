import { DeckhandError } from "@deckhand/wire";

export type AgentErrorCode = "invalid_config" | "listen_failed";

/** Errors the workspace agent raises itself (configuration, start-up). */
export class AgentError extends DeckhandError<AgentErrorCode> {
  static override readonly errorName = "AgentError";
}
