// Where an agent text turn's server work goes: the server in this process (sandbox off), a
// WebSocket client on the session's stream, the native agent against a fake model that answers
// at once and the scripted ACP agent. It prints, for one turn of each, every SQL statement in the
// order sent with its engine time, then over N turns of each the statements, the engine time and
// the process's CPU per turn (server, client and fake model: the same on both sides of an A/B).
// Not part of `npm run bench`: a tool for finding the time, and for interleaved A/B runs.
//
//   node --conditions=source [--cpu-prof] bench/profile-agent-turn.ts [--turns 30] [--list]
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { resolveServerConfig, startServer } from "@deckhand/server-app";
import {
  createTempRepository,
  renderTurn,
  SessionStreamClient,
  scriptedAcpAgentCommand,
  startFakeModel,
  turn,
} from "@deckhand/testkit";
import { type CreateMessageResponse, ServerPath, serverPath } from "@deckhand/wire";
import pino from "pino";
import { loadAverage, median, round } from "./support/figures.ts";
import { type Statement, traceSql } from "./support/sql-trace.ts";

const { values } = parseArgs({
  options: { turns: { type: "string", default: "30" }, list: { type: "boolean", default: false } },
});
const TURNS = Number(values.turns);
const WARMUP = 8;
const UPSTREAM_KEY_ENV = "BENCH_FAKE_UPSTREAM_KEY";

let recording: Statement[] | null = null;
await traceSql((statement) => recording?.push(statement));

const model = await startFakeModel();
let sequence = 0;
model.respondWith(() => {
  sequence += 1;
  return renderTurn("responses", turn.text("Done."), { model: "gpt-5-codex", sequence });
});
const repository = createTempRepository({ "README.md": "# bench\n" }, "deckhand-profile-turn-");
const dataDir = mkdtempSync(join(tmpdir(), "deckhand-profile-turn-"));
writeFileSync(
  join(dataDir, "config.json"),
  JSON.stringify({
    modelUpstreams: {
      deckhand: { kind: "openai", baseUrl: `${model.url}/v1`, apiKeyEnv: UPSTREAM_KEY_ENV },
    },
    modelProxyRateLimit: false,
    sandbox: "none",
  }),
);
writeFileSync(
  join(dataDir, "providers.json"),
  JSON.stringify({
    providers: {
      scripted: { extends: "acp", label: "Scripted", command: scriptedAcpAgentCommand() },
    },
  }),
);
const server = await startServer(
  resolveServerConfig(
    { listen: "127.0.0.1:0", dataDir, logLevel: "silent" },
    { environment: { [UPSTREAM_KEY_ENV]: "sk-bench" } },
  ),
  { logger: pino({ level: "silent" }) },
);

async function post<Body>(path: string, body: unknown): Promise<Body> {
  const response = await fetch(`${server.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`);
  return (await response.json()) as Body;
}

try {
  const project = await post<{ id: string }>(ServerPath.projects, {
    repository_path: repository.path,
  });
  const session = await post<{ id: string }>(
    serverPath(ServerPath.projectSessions, { project_id: project.id }),
    { approval_policy: "never" },
  );
  const chat = await post<{ id: string }>(
    serverPath(ServerPath.sessionChats, { session_id: session.id }),
    {},
  );
  const stream = new SessionStreamClient(
    server.url,
    serverPath(ServerPath.sessionStream, { session_id: session.id }),
  );
  await stream.opened;

  /** Posts a message and resolves when the stream shows its turn finished. */
  const runTurn = async (agent: string, text: string) => {
    const posted = await post<CreateMessageResponse>(
      serverPath(ServerPath.chatMessages, { chat_id: chat.id }),
      { agent, text },
    );
    await stream.waitFor((client) => {
      const events = client.events();
      const started = events.find(
        ({ event }) => event.type === "turn_started" && event.user_message_id === posted.message.id,
      );
      if (started?.event.type !== "turn_started") return false;
      const messageId = started.event.message_id;
      return events.some(
        ({ event }) => event.type === "turn_finished" && event.message_id === messageId,
      );
    }, 60_000);
  };
  /** Lets statements sent after the client saw the turn end (the queue's) be counted. */
  const settle = () => new Promise((resolveWait) => setTimeout(resolveWait, 50));

  console.log(`agent text turns, server in process, sandbox off, load average ${loadAverage()}`);
  for (const [agent, text] of [
    ["deckhand", "say done"],
    ["scripted", "hello"],
  ] as const) {
    for (let index = 0; index < WARMUP; index += 1) await runTurn(agent, text);
    await settle();
    recording = [];
    await runTurn(agent, text);
    await settle();
    const one = recording;
    recording = null;
    if (values.list) {
      console.log(`\none ${agent} turn: ${one.length} statements`);
      const start = one[0]?.t ?? 0;
      for (const statement of one) {
        console.log(
          `  +${round(statement.t - start, 1)
            .toFixed(1)
            .padStart(6)} ms  ${round(statement.ms, 2)
            .toFixed(2)
            .padStart(5)} ms  ${statement.text.replace(/\s+/g, " ").trim().slice(0, 120)}`,
        );
      }
    }
    const statements: number[] = [];
    const engineMs: number[] = [];
    const cpuMs: number[] = [];
    const wallMs: number[] = [];
    for (let index = 0; index < TURNS; index += 1) {
      recording = [];
      const cpu = process.cpuUsage();
      const started = performance.now();
      await runTurn(agent, text);
      wallMs.push(performance.now() - started);
      const used = process.cpuUsage(cpu);
      cpuMs.push((used.user + used.system) / 1000);
      await settle();
      statements.push(recording.length);
      engineMs.push(recording.reduce((sum, statement) => sum + statement.ms, 0));
      recording = null;
    }
    console.log(
      `${agent}: ${median(statements)} statements per turn (engine ${round(median(engineMs), 2)} ms), CPU ${round(median(cpuMs), 1)} ms, wall p50 ${round(median(wallMs), 1)} ms`,
    );
  }
  await stream.close();
} finally {
  await server.close();
  await model.close();
  repository.remove();
  rmSync(dataDir, { recursive: true, force: true });
}
