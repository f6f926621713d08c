import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type BatchRunEvent,
  ServerPath,
  type StoredBatchRunEvent,
  serverPath,
} from "@deckhand/wire";
import { afterEach, describe, expect, it, vi } from "vitest";
import { runBatchRunCommand } from "./batch-run-command.ts";

const RUN_ID = "00000000-0000-4000-8000-0000000000aa";

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
    workspaces: 0,
    pending: 0,
    running: 0,
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

function stored(id: number, event: BatchRunEvent): StoredBatchRunEvent {
  return { id, batch_run_id: RUN_ID, created_at: "2025-01-01T00:00:00.000Z", event };
}

const events = [
  stored(1, { type: "run_started", workspaces: 0 }),
  stored(2, {
    type: "run_finished",
    status: "completed",
    error: null,
    summary: { workspaces: 0, changesets: 0, steps_run: 0, steps_cached: 0, failed: 0 },
  }),
];

type Listener = (event: { data?: unknown; code?: number }) => void;

/** A run stream that sends `events` once open. */
class FakeRunStream {
  static readonly CONNECTING = 0;
  static readonly OPEN = 1;
  readyState = FakeRunStream.CONNECTING;
  readonly #listeners = new Map<string, Listener[]>();

  constructor() {
    setTimeout(() => {
      this.readyState = FakeRunStream.OPEN;
      for (const event of events) {
        if (this.readyState !== FakeRunStream.OPEN) return;
        this.#emit("message", { data: JSON.stringify({ type: "event", event }) });
      }
    }, 1);
  }

  addEventListener(type: string, listener: Listener) {
    this.#listeners.set(type, [...(this.#listeners.get(type) ?? []), listener]);
  }

  close(code = 1000) {
    if (this.readyState > FakeRunStream.OPEN) return;
    this.readyState = 3;
    this.#emit("close", { code });
  }

  #emit(type: string, event: { data?: unknown; code?: number }) {
    for (const listener of this.#listeners.get(type) ?? []) listener(event);
  }
}

/**
 * A server on a free loopback port that creates the run and records each request; it has no
 * spend to give.
 */
async function fakeServer() {
  const requests: string[] = [];
  const server = createServer((request, response) => {
    request.resume();
    const path = new URL(request.url ?? "/", "http://localhost").pathname;
    requests.push(`${request.method} ${path}`);
    const created = request.method === "POST" && path === ServerPath.batchRuns;
    response.writeHead(created ? 201 : 404, { "content-type": "application/json" });
    response.end(JSON.stringify(created ? run : { error: { code: "not_found", message: "none" } }));
  });
  servers.push(server);
  await new Promise<void>((listening) => server.listen(0, "127.0.0.1", listening));
  const { port } = server.address() as AddressInfo;
  return { requests, url: `http://127.0.0.1:${port}` };
}

const servers: Server[] = [];
let scratch: string | undefined;
afterEach(async () => {
  vi.unstubAllGlobals();
  await Promise.all(
    servers.splice(0).map((server) => new Promise((closed) => server.close(closed))),
  );
  if (scratch !== undefined) rmSync(scratch, { recursive: true, force: true });
  scratch = undefined;
});

async function preview(isTTY: boolean) {
  scratch = mkdtempSync(join(tmpdir(), "deckhand-batch-run-command-"));
  const spec = join(scratch, "spec.yaml");
  writeFileSync(spec, "name: demo\nsteps:\n  - run: true\n    container: alpine:3\n");
  const server = await fakeServer();
  vi.stubGlobal("WebSocket", FakeRunStream);
  let stdout = "";
  const code = await runBatchRunCommand("preview", [spec, "--server", server.url], {
    stdout: {
      write: (text: string) => {
        stdout += text;
      },
      isTTY,
      columns: 100,
      rows: 40,
    },
    stderr: { write: () => {} },
    cwd: scratch,
    env: {},
    onSignal: () => () => {},
  });
  return { code, requests: server.requests, stdout };
}

describe("deckhand batch preview --server", () => {
  it("reads the run's spend for the terminal view, which shows it, and not for JSON lines", async () => {
    const terminal = await preview(true);
    expect(terminal.code).toBe(0);
    expect(terminal.requests).toContain(
      `GET ${serverPath(ServerPath.batchRunSpend, { batch_run_id: RUN_ID })}`,
    );

    const json = await preview(false);
    expect(json.code).toBe(0);
    expect(json.requests).toEqual([`POST ${ServerPath.batchRuns}`]);
    expect(json.stdout.trim().split("\n").at(-1)).toContain('"type":"summary"');
  });
});
