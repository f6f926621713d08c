// The CLI's client of the batch-run API: one for a server named by --server and for the one the
// CLI starts in its own process, so both modes run the same code.
import {
  type BatchChangeRollout,
  BatchChangeRolloutSchema,
  BatchChangesetListSchema,
  type BatchRun,
  BatchRunSchema,
  type BatchRunSpend,
  BatchRunSpendSchema,
  type BatchRunStreamFrame,
  BatchRunStreamFrameSchema,
  type CreateBatchRunRequest,
  ErrorResponseSchema,
  ServerPath,
  type StoredBatchChangeset,
  type StoredBatchRunEvent,
  serverPath,
  WireHeader,
  WireSubprotocol,
} from "@deckhand/wire";

/** The server answered with an error (`{error: {code, message}}`), or could not be reached. */
export class BatchApiError extends Error {
  override readonly name = "BatchApiError";
  /** The HTTP status; 0 when the server could not be reached. */
  readonly status: number;
  readonly code: string;

  constructor(status: number, code: string, message: string, options?: ErrorOptions) {
    super(message, options);
    this.status = status;
    this.code = code;
  }
}

export interface FollowOptions {
  /** The last event id already seen; the stream starts after it. */
  after?: number;
  onEvent(event: StoredBatchRunEvent): void;
  /** Stops following (the promise then resolves without a `run_finished`). */
  signal?: AbortSignal;
  /** How long to keep reconnecting after the stream broke; 30 s by default. */
  reconnectForMs?: number;
}

/** How a stream connection ended. */
type StreamEnd = { finished: true } | { finished: false; reason: string };

function delay(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolveDelay) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolveDelay();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}

/** How the client reaches the server; Node's own fetch and WebSocket unless a test says. */
export interface BatchRunTransport {
  fetch?: typeof fetch;
  WebSocket?: typeof WebSocket;
}

export class BatchRunClient {
  readonly #baseUrl: string;
  readonly #token: string | null;
  readonly #fetch: typeof fetch;
  readonly #WebSocket: typeof WebSocket;

  constructor(baseUrl: string, token: string | null, transport: BatchRunTransport = {}) {
    this.#baseUrl = baseUrl.replace(/\/+$/, "");
    this.#token = token;
    this.#fetch = transport.fetch ?? fetch;
    this.#WebSocket = transport.WebSocket ?? WebSocket;
  }

  get baseUrl(): string {
    return this.#baseUrl;
  }

  async #send(method: string, path: string, body?: unknown): Promise<unknown> {
    const headers = new Headers();
    if (this.#token) headers.set(WireHeader.authorization, `Bearer ${this.#token}`);
    if (body !== undefined) headers.set("content-type", "application/json");
    let response: Response;
    try {
      response = await this.#fetch(`${this.#baseUrl}${path}`, {
        method,
        headers,
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
    } catch (error) {
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      const reason = cause?.code ?? cause?.message ?? (error as Error).message;
      throw new BatchApiError(
        0,
        "unreachable",
        `cannot reach the Deckhand server at ${this.#baseUrl} (${reason})`,
        { cause: error },
      );
    }
    const text = await response.text();
    let parsed: unknown = null;
    try {
      parsed = text === "" ? null : JSON.parse(text);
    } catch {
      // Not JSON: a proxy's error page, say. Reported below with the status.
    }
    if (!response.ok) {
      const answer = ErrorResponseSchema.safeParse(parsed);
      if (answer.success) {
        throw new BatchApiError(response.status, answer.data.error.code, answer.data.error.message);
      }
      throw new BatchApiError(
        response.status,
        "unexpected_answer",
        `${method} ${path} answered ${response.status}: ${text.slice(0, 200)}`,
      );
    }
    return parsed;
  }

  async createRun(request: CreateBatchRunRequest): Promise<BatchRun> {
    return BatchRunSchema.parse(await this.#send("POST", ServerPath.batchRuns, request));
  }

  async getRun(runId: string): Promise<BatchRun> {
    return BatchRunSchema.parse(
      await this.#send("GET", serverPath(ServerPath.batchRun, { batch_run_id: runId })),
    );
  }

  async cancelRun(runId: string): Promise<BatchRun> {
    return BatchRunSchema.parse(
      await this.#send("POST", serverPath(ServerPath.batchRunCancel, { batch_run_id: runId })),
    );
  }

  async listChangesets(runId: string): Promise<StoredBatchChangeset[]> {
    const answer = BatchChangesetListSchema.parse(
      await this.#send("GET", serverPath(ServerPath.batchRunChangesets, { batch_run_id: runId })),
    );
    return answer.changesets;
  }

  /** The run's model spend against its budget and its workspaces'. */
  async runSpend(runId: string): Promise<BatchRunSpend> {
    return BatchRunSpendSchema.parse(
      await this.#send("GET", serverPath(ServerPath.batchRunSpend, { batch_run_id: runId })),
    );
  }

  /** A batch change's rollout: its pace and when each waiting pull request goes out. */
  async rollout(name: string): Promise<BatchChangeRollout> {
    return BatchChangeRolloutSchema.parse(
      await this.#send("GET", serverPath(ServerPath.batchChangeRollout, { name })),
    );
  }

  /** The run stream's WebSocket URL, resuming after event `after`. */
  streamUrl(runId: string, after: number): string {
    const path = serverPath(ServerPath.batchRunStream, { batch_run_id: runId });
    return `${this.#baseUrl.replace(/^http/, "ws")}${path}${after > 0 ? `?after=${after}` : ""}`;
  }

  /**
   * Delivers the run's events in order, each once, until its `run_finished` event. A stream
   * that breaks (a server restart, a network hiccup) is opened again after the last event seen,
   * for `reconnectForMs` after the last event arrived.
   */
  async follow(runId: string, options: FollowOptions): Promise<void> {
    let last = options.after ?? 0;
    let lastProgress = Date.now();
    let attempt = 0;
    const reconnectForMs = options.reconnectForMs ?? 30_000;
    for (;;) {
      if (options.signal?.aborted) return;
      const end = await this.#stream(runId, last, options.signal, (event) => {
        // The server never repeats an event after the cursor; this keeps that true across
        // reconnections whatever happens.
        if (event.id <= last) return false;
        last = event.id;
        lastProgress = Date.now();
        attempt = 0;
        options.onEvent(event);
        return event.event.type === "run_finished";
      });
      if (end.finished || options.signal?.aborted) return;
      if (Date.now() - lastProgress > reconnectForMs) {
        throw new BatchApiError(
          0,
          "stream_lost",
          `lost the stream of batch run ${runId} (${end.reason})`,
        );
      }
      // A 404 or 401 is final: the GET says so with the server's own message. A server that is
      // away (restarting) is tried again until the window closes.
      await this.getRun(runId).catch((error: unknown) => {
        if (!(error instanceof BatchApiError && (error.status === 0 || error.status >= 500))) {
          throw error;
        }
      });
      attempt += 1;
      await delay(Math.min(100 * 2 ** attempt, 2_000), options.signal);
    }
  }

  /** One connection of the run stream; `onEvent` returns true at the last event. */
  #stream(
    runId: string,
    after: number,
    signal: AbortSignal | undefined,
    onEvent: (event: StoredBatchRunEvent) => boolean,
  ): Promise<StreamEnd> {
    return new Promise((resolveEnd, rejectEnd) => {
      // A WebSocket cannot carry headers from every client; the token travels as a second
      // subprotocol, which the server never answers with.
      const protocols: string[] = [WireSubprotocol.batchRunStream];
      if (this.#token) protocols.push(`${WireSubprotocol.bearerPrefix}${this.#token}`);
      const socket = new this.#WebSocket(this.streamUrl(runId, after), protocols);
      const { OPEN, CONNECTING } = this.#WebSocket;
      let settled = false;
      const settle = (end: StreamEnd | { error: unknown }) => {
        if (settled) return;
        settled = true;
        signal?.removeEventListener("abort", abort);
        if (socket.readyState === OPEN || socket.readyState === CONNECTING) {
          socket.close();
        }
        if ("error" in end) rejectEnd(end.error);
        else resolveEnd(end);
      };
      const abort = () => settle({ finished: false, reason: "stopped" });
      signal?.addEventListener("abort", abort, { once: true });
      socket.addEventListener("message", (message) => {
        if (settled) return;
        let frame: BatchRunStreamFrame;
        try {
          frame = BatchRunStreamFrameSchema.parse(JSON.parse(String(message.data)));
        } catch {
          settle({ finished: false, reason: "the server sent a frame this client does not read" });
          return;
        }
        if (frame.type === "error") {
          settle({ finished: false, reason: frame.error.message });
          return;
        }
        if (frame.type !== "event") return;
        try {
          if (onEvent(frame.event)) settle({ finished: true });
        } catch (error) {
          settle({ error });
        }
      });
      socket.addEventListener("close", (event) =>
        settle({ finished: false, reason: `closed with code ${event.code}` }),
      );
      socket.addEventListener("error", () =>
        settle({ finished: false, reason: "the connection failed" }),
      );
    });
  }
}
