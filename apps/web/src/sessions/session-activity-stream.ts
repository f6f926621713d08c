import { type SessionActivityEvent, WireSubprotocol } from "@deckhand/wire";
import { server } from "../api.ts";
import { EventStream, type EventStreamHandlers } from "../streams/event-stream.ts";

/**
 * The session list's live feed (`deckhand.session-activity.v1`): a session, whole, whenever its
 * activity, latest event or archived state changes. It holds no backlog, so whoever uses it lists
 * sessions again each time it turns `live` (connected, or reconnected after a drop).
 */
export class SessionActivityStream extends EventStream<SessionActivityEvent> {
  constructor(handlers: EventStreamHandlers<SessionActivityEvent>) {
    super(
      { path: server.streamSessionActivity.url(), subprotocol: WireSubprotocol.sessionActivity },
      handlers,
    );
  }
}
