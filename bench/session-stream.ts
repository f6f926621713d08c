// Measures the session stream: frames per second from persisting an event to delivering it to
// 1 and 50 connected WebSocket clients, and the persist rate with nobody listening, in one run
// so the ratios compare. Runs a real server (embedded PGlite) on 127.0.0.1.
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
import { createTempRepository } from "@deckhand/testkit";
import { ServerPath, serverPath } from "@deckhand/wire";
import pino from "pino";
import WebSocket from "ws";

const EVENTS = 2_000;
const round = (value: number) => Math.round(value * 10) / 10;

async function openSession(server: RunningServer, repository: string): Promise<string> {
  const post = async (path: string, body: unknown) => {
    const response = await fetch(`${server.url}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    return (await response.json()) as { id: string };
  };
  const project = await post(ServerPath.projects, { repository_path: repository });
  const session = await post(
    serverPath(ServerPath.projectSessions, { project_id: project.id }),
    {},
  );
  return session.id;
}

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

const dataDir = mkdtempSync(join(tmpdir(), "deckhand-bench-stream-"));
const repository = createTempRepository({ "README.md": "# bench\n" }, "deckhand-bench-repo-");
const server = await startServer(
  resolveServerConfig(
    { listen: "127.0.0.1:0", dataDir, workspaceAgent: false, logLevel: "silent" },
    { environment: {} },
  ),
  { logger: pino({ level: "silent" }) },
);
try {
  const alone = await measure(server, repository.path, 0);
  const one = await measure(server, repository.path, 1);
  const fifty = await measure(server, repository.path, 50);
  console.log(`session stream, ${EVENTS} events persisted one by one (PGlite), then fanned out:`);
  for (const figures of [alone, one, fifty]) {
    console.log(
      `  ${String(figures.clients).padStart(2)} clients: ${figures.eventsPerSecond} events/s persisted, ${figures.framesPerSecond} frames/s delivered, last frame ${figures.lastFrameAfterLastPersistMs} ms after the last persist`,
    );
  }
  console.log(
    `  persist rate with 50 clients vs none: ${(fifty.eventsPerSecond / alone.eventsPerSecond).toFixed(2)}`,
  );
} finally {
  await server.close();
  rmSync(dataDir, { recursive: true, force: true });
  repository.remove();
}
