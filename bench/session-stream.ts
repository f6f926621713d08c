// Measures the session stream: frames per second from persisting an event to delivering it to
// 1 and 50 connected WebSocket clients, and the persist rate with nobody listening, in one run
// so the ratios compare, beside the database's own floor: the same rows inserted one by one with
// a bare statement each (no transaction, lock, notify or redaction). Runs a real server
// (embedded PGlite) on 127.0.0.1; with DATABASE_URL set, once more on PostgreSQL.
//
//   node --conditions=source bench/session-stream.ts
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  publishSessionEvent,
  type RunningServer,
  resolveServerConfig,
  startServer,
} from "@deckhand/server-app";
import {
  createPostgresTestDatabase,
  createTempRepository,
  type PostgresTestDatabase,
} from "@deckhand/testkit";
import { ServerPath, serverPath } from "@deckhand/wire";
import pino from "pino";
import WebSocket from "ws";
// Not public API: the group-commit writer an agent turn streams its events through
// (packages/sessions/src/turns/turn-stream.ts), measured here on the server's own database.
import { SessionEventWriter } from "../packages/sessions/src/store/session-events.ts";
import {
  databaseUrlFromEnvironment,
  loadAverage,
  reportFigure,
  reportSkipped,
} from "./support/figures.ts";
import { openSession } from "./support/open-session.ts";

const EVENTS = 2_000;
const round = (value: number) => Math.round(value * 10) / 10;

/** Connects `count` clients that count event frames; resolves once every one is caught up. */
async function connectClients(server: RunningServer, sessionId: string, count: number) {
  const url = `${server.url.replace(/^http/, "ws")}${serverPath(ServerPath.sessionStream, { session_id: sessionId })}`;
  const clients = await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<{ socket: WebSocket; received: () => number; lastId: () => number }>(
          (resolveClient, rejectClient) => {
            const socket = new WebSocket(url);
            let received = 0;
            let lastId = 0;
            socket.on("message", (data) => {
              const frame = JSON.parse(data.toString()) as {
                type: string;
                event?: { id: number };
                last_event_id?: number;
              };
              if (frame.type === "event") {
                received += 1;
                lastId = frame.event!.id;
              }
              if (frame.type === "ready") {
                lastId = frame.last_event_id!;
                resolveClient({ socket, received: () => received, lastId: () => lastId });
              }
            });
            socket.once("error", rejectClient);
          },
        ),
    ),
  );
  return clients;
}

async function publish(server: RunningServer, sessionId: string, count: number): Promise<number> {
  const messageId = randomUUID();
  let lastId = 0;
  for (let index = 0; index < count; index += 1) {
    const event = await publishSessionEvent(server.database.db, sessionId, null, {
      type: "text",
      message_id: messageId,
      delta: `token ${index} `,
    });
    lastId = event.id;
  }
  return lastId;
}

async function measure(server: RunningServer, repository: string, clientCount: number) {
  const sessionId = await openSession(server, repository);
  const clients = await connectClients(server, sessionId, clientCount);
  const started = performance.now();
  const lastId = await publish(server, sessionId, EVENTS);
  const persistedMs = performance.now() - started;
  while (clients.some((client) => client.lastId() < lastId)) {
    await new Promise((resolveWait) => setTimeout(resolveWait, 2));
  }
  const deliveredMs = performance.now() - started;
  for (const client of clients) client.socket.close();
  const frames = clients.reduce((total, client) => total + client.received(), 0);
  if (frames !== EVENTS * clientCount)
    throw new Error(`expected ${EVENTS * clientCount} frames, got ${frames}`);
  return {
    clients: clientCount,
    eventsPerSecond: round((EVENTS / persistedMs) * 1000),
    framesPerSecond: round((frames / deliveredMs) * 1000),
    lastFrameAfterLastPersistMs: round(deliveredMs - persistedMs),
  };
}

/**
 * The same events streamed as a turn streams them: appended without waiting for each, written
 * by the session's group-commit writer (one multi-row insert per transaction); events/s until
 * the last is stored, after checking every one was stored once, in order.
 */
async function streamed(server: RunningServer, sessionId: string): Promise<number> {
  const messageId = randomUUID();
  const writer = new SessionEventWriter(server.database.db, sessionId);
  const started = performance.now();
  for (let index = 0; index < EVENTS; index += 1) {
    await writer.append(null, { type: "text", message_id: messageId, delta: `token ${index} ` });
  }
  await writer.flush();
  const rate = round((EVENTS / (performance.now() - started)) * 1000);
  const rows = await server.database.query<{ delta: string }>(
    "select payload->>'delta' as delta from session_events where session_id = $1 and type = 'text' order by id",
    [sessionId],
  );
  const expected = Array.from({ length: EVENTS }, (_, index) => `token ${index} `);
  if (JSON.stringify(rows.rows.map((row) => row.delta)) !== JSON.stringify(expected)) {
    throw new Error("the streamed events were not stored once each, in order");
  }
  return rate;
}

/** The database's floor: the same rows, one bare autocommitted insert each; events/s. */
async function bareInserts(server: RunningServer, sessionId: string): Promise<number> {
  const messageId = randomUUID();
  const started = performance.now();
  for (let index = 0; index < EVENTS; index += 1) {
    await server.database.query(
      "insert into session_events (session_id, type, payload) values ($1, $2, $3) returning id, created_at",
      [
        sessionId,
        "text",
        JSON.stringify({ type: "text", message_id: messageId, delta: `token ${index} ` }),
      ],
    );
  }
  return round((EVENTS / (performance.now() - started)) * 1000);
}

async function measureServer(label: string, databaseUrl?: string) {
  const dataDir = mkdtempSync(join(tmpdir(), "deckhand-bench-stream-"));
  const server = await startServer(
    resolveServerConfig(
      {
        listen: "127.0.0.1:0",
        dataDir,
        workspaceAgent: false,
        logLevel: "silent",
        ...(databaseUrl ? { databaseUrl } : {}),
      },
      { environment: {} },
    ),
    { logger: pino({ level: "silent" }) },
  );
  try {
    const alone = await measure(server, repository.path, 0);
    const one = await measure(server, repository.path, 1);
    const fifty = await measure(server, repository.path, 50);
    const bare = await bareInserts(server, await openSession(server, repository.path));
    const stream = await streamed(server, await openSession(server, repository.path));
    console.log(
      `session stream, ${EVENTS} events persisted one by one (${label}), then fanned out; load average ${loadAverage()}:`,
    );
    console.log(`  bare insert, one statement each: ${bare} events/s`);
    console.log(`  streamed as a turn streams them (group commit): ${stream} events/s`);
    for (const figures of [alone, one, fifty]) {
      console.log(
        `  ${String(figures.clients).padStart(2)} clients: ${figures.eventsPerSecond} events/s persisted, ${figures.framesPerSecond} frames/s delivered, last frame ${figures.lastFrameAfterLastPersistMs} ms after the last persist`,
      );
    }
    console.log(
      `  persist rate with 50 clients vs none: ${(fifty.eventsPerSecond / alone.eventsPerSecond).toFixed(2)}`,
    );
    return { bare, alone, stream };
  } finally {
    await server.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

const repository = createTempRepository({ "README.md": "# bench\n" }, "deckhand-bench-repo-");
try {
  const pglite = await measureServer("PGlite");
  reportFigure({
    id: "events-persisted",
    label: "session events persisted one by one, no client",
    value: pglite.alone.eventsPerSecond,
    unit: "events/s",
    anchor: { label: "bare insert per event", value: pglite.bare, unit: "events/s" },
    comparison: { value: pglite.bare / pglite.alone.eventsPerSecond, unit: "×" },
    note: "PGlite; the comparison is how many times slower than the bare insert",
  });
  reportFigure({
    id: "events-streamed",
    label: "session events streamed as an agent turn streams them (group commit), no client",
    value: pglite.stream,
    unit: "events/s",
    anchor: { label: "bare insert per event", value: pglite.bare, unit: "events/s" },
    comparison: { value: pglite.stream / pglite.bare, unit: "×" },
    note: "PGlite; the comparison is how many times the bare insert's rate",
  });
  const databaseUrl = databaseUrlFromEnvironment();
  if (databaseUrl === undefined) {
    reportSkipped({
      id: "events-persisted-postgres",
      label: "session events persisted on PostgreSQL",
      skipped: "set DATABASE_URL to include it",
    });
  } else {
    let database: PostgresTestDatabase | null = null;
    try {
      database = await createPostgresTestDatabase(databaseUrl);
      const postgres = await measureServer("PostgreSQL", database.url);
      reportFigure({
        id: "events-persisted-postgres",
        label: "session events persisted one by one, no client, PostgreSQL",
        value: postgres.alone.eventsPerSecond,
        unit: "events/s",
        anchor: { label: "bare insert per event", value: postgres.bare, unit: "events/s" },
        comparison: { value: postgres.bare / postgres.alone.eventsPerSecond, unit: "×" },
      });
    } finally {
      await database?.drop();
    }
  }
} finally {
  repository.remove();
}
