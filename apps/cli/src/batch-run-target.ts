// Where `deckhand batch preview|apply` sends its run: the batch-run API of a server named by
// --server (over HTTP, its stream over a WebSocket), or the batch engine this process starts
// (embedded-runner.ts), called in-process with the same requests and answers.
import { createServerClient } from "@deckhand/server-client";
import { nodeHttpTransport } from "@deckhand/server-client/node-http";
import type {
  BatchRun,
  BatchRunSpend,
  CreateBatchRunRequest,
  StoredBatchChangeset,
} from "@deckhand/wire";
import { BatchRunFollower, type FollowOptions } from "./batch-run-follow.ts";

/** The run API a batch command uses, and how to let it go afterwards. */
export interface RunTarget {
  createRun(request: CreateBatchRunRequest): Promise<BatchRun>;
  cancelRun(runId: string): Promise<unknown>;
  runSpend(runId: string): Promise<BatchRunSpend>;
  changesets(runId: string): Promise<StoredBatchChangeset[]>;
  /** Delivers the run's events in order, each once, until its `run_finished` event. */
  follow(runId: string, options: FollowOptions): Promise<void>;
  /** For messages: where checkouts are kept with --keep-logs, say; null on a server. */
  dataDir: string | null;
  close(): Promise<void>;
}

/**
 * Node's WebSocket is undici's, loaded at its first use (tens of milliseconds of CPU): the run's
 * stream needs it right after the run's request is answered, so it is loaded while that request
 * is out rather than after.
 */
function loadWebSocket(): void {
  void globalThis.WebSocket;
}

/** A server's batch-run API, over HTTP. */
export function serverTarget(baseUrl: string, token: string | null): RunTarget {
  // Requests over node:http: fetch would load undici before the run's request could leave.
  const client = createServerClient({ baseUrl, token, transport: nodeHttpTransport });
  const follower = new BatchRunFollower({ client, token });
  const run = (runId: string) => ({ params: { batch_run_id: runId } });
  return {
    createRun: (request) => client.createBatchRun({ body: request }, { onSent: loadWebSocket }),
    cancelRun: (runId) => client.cancelBatchRun(run(runId)),
    runSpend: (runId) => client.getBatchRunSpend(run(runId)),
    changesets: async (runId) => (await client.listBatchRunChangesets(run(runId))).changesets,
    follow: (runId, options) => follower.follow(runId, options),
    dataDir: null,
    close: async () => {},
  };
}
