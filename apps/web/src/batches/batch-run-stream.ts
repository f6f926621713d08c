import { type StoredBatchRunEvent, WireSubprotocol } from "@deckhand/wire";
import { server } from "../api.ts";
import { EventStream, type EventStreamHandlers } from "../streams/event-stream.ts";

/** A batch run's event stream (`deckhand.batch-run-stream.v1`), resumed across dropped connections. */
export class BatchRunStream extends EventStream<StoredBatchRunEvent> {
  constructor(runId: string, handlers: EventStreamHandlers<StoredBatchRunEvent>) {
    super(
      {
        path: server.streamBatchRun.url({ params: { batch_run_id: runId } }),
        subprotocol: WireSubprotocol.batchRunStream,
      },
      handlers,
    );
  }
}
