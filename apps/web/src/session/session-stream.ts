import { ServerPath, type SessionEvent, serverPath, WireSubprotocol } from "@deckhand/wire";
import { EventStream, type EventStreamHandlers } from "../streams/event-stream.ts";

export type { StreamState } from "../streams/event-stream.ts";

/** A session's event stream (`deckhand.session-stream.v1`), resumed across dropped connections. */
export class SessionStream extends EventStream<SessionEvent> {
  constructor(sessionId: string, handlers: EventStreamHandlers<SessionEvent>) {
    super(
      {
        path: serverPath(ServerPath.sessionStream, { session_id: sessionId }),
        subprotocol: WireSubprotocol.sessionStream,
      },
      handlers,
    );
  }
}
