import { createServerClient, ServerApiError } from "@deckhand/server-client";
import { type BatchRunEvent, type StoredBatchRunEvent, WireSubprotocol } from "@deckhand/wire";
import { describe, expect, it } from "vitest";
import { BatchRunFollower } from "./batch-run-follow.ts";

const RUN_ID = "00000000-0000-4000-8000-0000000000aa";

function stored(id: number, event: BatchRunEvent): StoredBatchRunEvent {
  return { id, batch_run_id: RUN_ID, created_at: "2025-01-01T00:00:00.000Z", event };
}

const log: StoredBatchRunEvent[] = [
  stored(1, { type: "run_started", workspaces: 1 }),
  stored(2, {
    type: "workspace_started",
    workspace: { repository: "r", branch: "main", path: "", revision: "a".repeat(40) },
  }),
  stored(3, {
    type: "workspace_finished",
    workspace: { repository: "r", branch: "main", path: "", revision: "a".repeat(40) },
    status: "completed",
    error: null,
  }),
  stored(4, {
    type: "run_finished",
    status: "completed",
    error: null,
    summary: { workspaces: 1, changesets: 0, steps_run: 1, steps_cached: 0, failed: 0 },
  }),
];

type Listener = (event: { data?: unknown; code?: number }) => void;

/**
 * A run stream that serves `log` after the URL's `after`; its first connection breaks after
 * two events, its second repeats an event the client has (a server must not; the client keeps
 * each event once anyway).
 */
function fakeStreams(options: { refuse?: boolean } = {}) {
  const connections: { url: string; protocols: string[] }[] = [];
  class FakeWebSocket {
    static readonly CONNECTING = 0;
    static readonly OPEN = 1;
    readyState = FakeWebSocket.CONNECTING;
    readonly #listeners = new Map<string, Listener[]>();

    constructor(url: string, protocols: string[]) {
      connections.push({ url, protocols });
      const after = Number(new URL(url).searchParams.get("after") ?? 0);
      const first = connections.length === 1;
      setTimeout(() => {
        if (options.refuse) {
          this.#emit("error", {});
          this.close(1006);
          return;
        }
        this.readyState = FakeWebSocket.OPEN;
        const events = log.filter((event) => event.id > (first ? after : after - 1));
        for (const event of first ? events.slice(0, 2) : events) {
          if (this.readyState !== FakeWebSocket.OPEN) return;
          this.#emit("message", { data: JSON.stringify({ type: "event", event }) });
        }
        if (first) this.close(1006);
      }, 1);
    }

    addEventListener(type: string, listener: Listener) {
      this.#listeners.set(type, [...(this.#listeners.get(type) ?? []), listener]);
    }

    close(code = 1000) {
      if (this.readyState > FakeWebSocket.OPEN) return;
      this.readyState = 3;
      this.#emit("close", { code });
    }

    #emit(type: string, event: { data?: unknown; code?: number }) {
      for (const listener of this.#listeners.get(type) ?? []) listener(event);
    }
  }
  return { connections, WebSocket: FakeWebSocket as unknown as typeof WebSocket };
}

function fakeFetch(answers: Record<string, { status: number; body: unknown }>): typeof fetch {
  return (async (input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(String(input));
    const key = `${init?.method ?? "GET"} ${url.pathname}`;
    const answer = answers[key];
    if (answer === undefined)
      throw new TypeError("fetch failed", { cause: { code: "ECONNREFUSED" } });
    return new Response(JSON.stringify(answer.body), { status: answer.status });
  }) as typeof fetch;
}

const run = {
  id: RUN_ID,
  batch_spec_id: "00000000-0000-4000-8000-0000000000bb",
  name: "demo",
  action: "preview",
  status: "running",
  options: {},
  warnings: [],
  error: null,
  stats: {
    workspaces: 1,
    pending: 0,
    running: 1,
    completed: 0,
    failed: 0,
    cancelled: 0,
    changesets: 0,
    steps_run: 0,
    steps_cached: 0,
  },
  created_at: "2025-01-01T00:00:00.000Z",
  started_at: null,
  finished_at: null,
};

/** A follower of runs on a fake server at `baseUrl`. */
function follower(
  baseUrl: string,
  token: string | null,
  transport: { WebSocket: typeof WebSocket; fetch: typeof fetch },
): BatchRunFollower {
  return new BatchRunFollower({
    client: createServerClient({ baseUrl, token, fetch: transport.fetch }),
    token,
    WebSocket: transport.WebSocket,
  });
}

describe("BatchRunFollower.follow", () => {
  it("reconnects after the last event it saw and delivers each event once, up to run_finished", async () => {
    const streams = fakeStreams();
    const client = follower("http://deckhand.test:7420/", "s3cret", {
      WebSocket: streams.WebSocket,
      fetch: fakeFetch({ [`GET /api/batch-runs/${RUN_ID}`]: { status: 200, body: run } }),
    });
    const seen: number[] = [];
    await client.follow(RUN_ID, { onEvent: (event) => seen.push(event.id) });
    expect(seen).toEqual([1, 2, 3, 4]);
    expect(streams.connections).toEqual([
      {
        url: `ws://deckhand.test:7420/api/batch-runs/${RUN_ID}/stream`,
        protocols: [WireSubprotocol.batchRunStream, "bearer.s3cret"],
      },
      {
        url: `ws://deckhand.test:7420/api/batch-runs/${RUN_ID}/stream?after=2`,
        protocols: [WireSubprotocol.batchRunStream, "bearer.s3cret"],
      },
    ]);
  });

  it("stops with the server's answer when the run is gone", async () => {
    const streams = fakeStreams();
    const client = follower("http://deckhand.test", null, {
      WebSocket: streams.WebSocket,
      fetch: fakeFetch({
        [`GET /api/batch-runs/${RUN_ID}`]: {
          status: 404,
          body: { error: { code: "not_found", message: `no batch run with id "${RUN_ID}"` } },
        },
      }),
    });
    const failure = await client.follow(RUN_ID, { onEvent: () => {} }).catch((error) => error);
    expect(failure).toBeInstanceOf(ServerApiError);
    expect(failure).toMatchObject({ status: 404, code: "not_found" });
    expect(streams.connections[0]!.protocols).toEqual([WireSubprotocol.batchRunStream]);
  });

  it("gives up when the server stays away", async () => {
    const streams = fakeStreams({ refuse: true });
    const client = follower("http://deckhand.test", null, {
      WebSocket: streams.WebSocket,
      fetch: fakeFetch({}),
    });
    const failure = await client
      .follow(RUN_ID, { onEvent: () => {}, reconnectForMs: 0 })
      .catch((error) => error);
    expect(failure).toMatchObject({ code: "stream_lost" });
    expect((failure as Error).message).toMatch(/^lost the stream of batch run /);
  });
});
