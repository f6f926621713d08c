import { type SessionEvent, WireSubprotocol } from "@deckhand/wire";
import { server } from "../api.ts";
import { EventStream, type EventStreamHandlers } from "../streams/event-stream.ts";

export type { StreamState } from "../streams/event-stream.ts";

/** A session's event stream (`deckhand.session-stream.v1`), resumed across dropped connections. */
export class SessionStream extends EventStream<SessionEvent> {
  constructor(sessionId: string, handlers: EventStreamHandlers<SessionEvent>) {
    super(
      {
        path: server.streamSession.url({ params: { session_id: sessionId } }),
        subprotocol: WireSubprotocol.sessionStream,
      },
      handlers,
    );
  }
}
