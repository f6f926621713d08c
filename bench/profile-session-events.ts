// Profiles "session events persisted one by one": a server on a new data directory (as the
// session-stream bench starts it), then PHASES rounds of EVENTS awaited `publishSessionEvent`
// calls on one session with no client, each round's rate, CPU, statements and engine time, then
// the bare single-row insert in the same process (the database's floor). With --profile-dir,
// each phase's CPU profile (that phase only, not the server's start) is written there, for
// bench/support/cpu-profile-summary.ts.
//
//   node --conditions=source bench/profile-session-events.ts [--phases 2] [--events 2000]
//     [--profile-dir DIR] [--database-url URL]
import { randomUUID } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { publishSessionEvent, resolveServerConfig, startServer } from "@deckhand/server-app";
import { createTempRepository } from "@deckhand/testkit";
import pino from "pino";
import { openSession } from "./support/open-session.ts";
import { StatementCounter } from "./support/sql-trace.ts";

const { values } = parseArgs({
  options: {
    phases: { type: "string", default: "2" },
    events: { type: "string", default: "2000" },
    "database-url": { type: "string" },
    "profile-dir": { type: "string" },
  },
});
const PHASES = Number(values.phases);
const EVENTS = Number(values.events);
const profileDir = values["profile-dir"];
const inspector = profileDir === undefined ? null : new Session();
if (inspector !== null) {
  mkdirSync(profileDir!, { recursive: true });
  inspector.connect();
  await inspector.post("Profiler.enable");
}
const counter = await StatementCounter.create();
const repository = createTempRepository({ "README.md": "# bench\n" }, "deckhand-profile-repo-");
const dataDir = mkdtempSync(join(tmpdir(), "deckhand-profile-events-"));
const server = await startServer(
  resolveServerConfig(
    {
      listen: "127.0.0.1:0",
      dataDir,
      workspaceAgent: false,
      logLevel: "silent",
      ...(values["database-url"] ? { databaseUrl: values["database-url"] } : {}),
    },
    { environment: {} },
  ),
  { logger: pino({ level: "silent" }) },
);

async function timed(label: string, run: () => Promise<void>): Promise<void> {
  await inspector?.post("Profiler.start");
  const cpu = process.cpuUsage();
  counter.start();
  const started = performance.now();
  await run();
  const wallMs = performance.now() - started;
  const { count, engineMs } = await counter.stop();
  if (inspector !== null) {
    const { profile } = await inspector.post("Profiler.stop");
    writeFileSync(
      join(profileDir!, `${label.replace(/\W+/g, "-")}.cpuprofile`),
      JSON.stringify(profile),
    );
  }
  const used = process.cpuUsage(cpu);
  console.log(
    `${label}: ${Math.round((EVENTS / wallMs) * 1000)} events/s; CPU ${(((used.user + used.system) / 1000 / EVENTS) * 1000).toFixed(0)} µs/event; ${(count / EVENTS).toFixed(2)} statements/event; engine ${((engineMs / EVENTS) * 1000).toFixed(0)} µs/event`,
  );
}

try {
  for (let phase = 1; phase <= PHASES; phase += 1) {
    const sessionId = await openSession(server, repository.path);
    const messageId = randomUUID();
    await timed(`one by one, phase ${phase}`, async () => {
      for (let index = 0; index < EVENTS; index += 1) {
        await publishSessionEvent(server.database.db, sessionId, null, {
          type: "text",
          message_id: messageId,
          delta: `token ${index} `,
        });
      }
    });
  }
  const sessionId = await openSession(server, repository.path);
  const messageId = randomUUID();
  await timed("bare insert", async () => {
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
  });
} finally {
  await server.close();
  rmSync(dataDir, { recursive: true, force: true });
  repository.remove();
}
