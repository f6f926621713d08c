import { ServerPath, type StoredBatchRunEvent, serverPath, WireSubprotocol } from "@deckhand/wire";
import { EventStream, type EventStreamHandlers } from "../streams/event-stream.ts";

/** A batch run's event stream (`deckhand.batch-run-stream.v1`), resumed across dropped connections. */
export class BatchRunStream extends EventStream<StoredBatchRunEvent> {
  constructor(runId: string, handlers: EventStreamHandlers<StoredBatchRunEvent>) {
    super(
      {
        path: serverPath(ServerPath.batchRunStream, { batch_run_id: runId }),
        subprotocol: WireSubprotocol.batchRunStream,
      },
      handlers,
    );
  }
}
