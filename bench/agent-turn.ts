// Agent turns through the whole server, model time excluded: a user message posted over HTTP,
// queued as a task, run by the native agent (against a fake model that answers at once) or by
// the scripted ACP agent (a real child process speaking ACP), every event persisted and fanned
// out to a WebSocket client, until the client sees `turn_finished`. Beside each figure stands
// the work the turn cannot avoid, measured in the same run: the same model request sent
// straight to the fake model, and the scripted agent's own prompt round trip over stdio with no
// Deckhand in between. Each server runs with the sandbox on (bubblewrap, the default where it
// works) and off (`sandbox: "none"`), so the sandbox's cost per turn shows; with DATABASE_URL
// set, once more on PostgreSQL. Also: the SQL statements one text turn sends, where a native
// text turn's time goes (HTTP, queue, backend, fan-out, from the events' timestamps), the first
// turn of a new chat (the ACP agent process starting), and events per second from the backend
// through the database to a WebSocket client, with an answer streamed as thousands of deltas.
//
//   node --conditions=source bench/agent-turn.ts [turns]
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { resolveServerConfig, startServer } from "@deckhand/server-app";
import {
  type CapturedRequest,
  createPostgresTestDatabase,
  createTempRepository,
  type PostgresTestDatabase,
  renderTurn,
  SessionStreamClient,
  scriptedAcpAgentCommand,
  startFakeModel,
  turn,
} from "@deckhand/testkit";
import {
  type CreateMessageResponse,
  ServerPath,
  type SessionEvent,
  serverPath,
} from "@deckhand/wire";
import pino from "pino";
import {
  databaseUrlFromEnvironment,
  loadAverage,
  median,
  percentile,
  reportFigure,
  reportSkipped,
  round,
} from "./support/figures.ts";
import { StatementCounter } from "./support/sql-trace.ts";

const TURNS = Number(process.argv[2] ?? 30);
const WARMUP = 5;
const FIRST_TURNS = 5;
const STREAMED_DELTAS = 5_000;
const UPSTREAM_KEY_ENV = "BENCH_FAKE_UPSTREAM_KEY";

const model = await startFakeModel();
// What the model is asked decides its answer, so each turn shape needs no script of its own:
// "execute" asks for one command and then answers; "stream" answers with many deltas.
const longAnswer = Array.from({ length: STREAMED_DELTAS }, (_, index) => `w${index}`).join(" ");
let sequence = 0;
model.respondWith((request: CapturedRequest) => {
  sequence += 1;
  const input = (request.json as { input: { type: string; content?: unknown }[] }).input;
  const last = input.at(-1);
  const asked = JSON.stringify(last?.content ?? "");
  const next =
    last?.type === "message" && asked.includes("execute")
      ? turn.functionCall("execute", { command: "echo hi" }, { callId: `call_${sequence}` })
      : last?.type === "message" && asked.includes("stream")
        ? turn.text(longAnswer)
        : turn.text("Done.");
  return renderTurn("responses", next, { model: "gpt-5-codex", sequence });
});
const repository = createTempRepository({ "README.md": "# bench\n" }, "deckhand-bench-turn-repo-");
const counter = await StatementCounter.create();

interface TurnTiming {
  elapsed: number;
  events: SessionEvent[];
  /**
   * ms: POST sent to its 202 answer; POST sent to turn_started (HTTP and queue pickup);
   * turn_started to turn_finished (the backend, events persisted); turn_finished to its frame
   * reaching the client (fan-out).
   */
  phases: [number, number, number, number];
}

interface ServerFigures {
  nativeText: number[];
  nativeExecute: number[];
  acpReply: number[];
  acpFirstTurn: number[];
  nativePhases: TurnTiming["phases"][];
  nativeStatements: number;
  /** What a native text turn sends, by statement, per turn. */
  nativeStatementTexts: [string, number][];
  acpStatements: number;
  streamed: { textEvents: number; elapsed: number; events: number; persistedMs: number };
}

/** A server on a new data directory; `sandbox` and `databaseUrl` as given. */
async function measureServer(
  sandbox: "auto" | "none",
  databaseUrl?: string,
): Promise<ServerFigures> {
  const dataDir = mkdtempSync(join(tmpdir(), "deckhand-bench-turn-"));
  writeFileSync(
    join(dataDir, "config.json"),
    JSON.stringify({
      modelUpstreams: {
        deckhand: { kind: "openai", baseUrl: `${model.url}/v1`, apiKeyEnv: UPSTREAM_KEY_ENV },
      },
      // A model that answers at once lets one agent send far more requests than the default
      // per-token limit allows (a burst of 60, then 2/s); over it, turns would measure the 429
      // retry wait instead of Deckhand.
      modelProxyRateLimit: false,
      sandbox,
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
      {
        listen: "127.0.0.1:0",
        dataDir,
        logLevel: "silent",
        ...(databaseUrl ? { databaseUrl } : {}),
      },
      { environment: { [UPSTREAM_KEY_ENV]: "sk-bench" } },
    ),
    { logger: pino({ level: "silent" }) },
  );
  const post = async <Body>(path: string, body: unknown): Promise<Body> => {
    const response = await fetch(`${server.url}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`);
    return (await response.json()) as Body;
  };
  const project = await post<{ id: string }>(ServerPath.projects, {
    repository_path: repository.path,
  });
  const session = await post<{ id: string }>(
    serverPath(ServerPath.projectSessions, { project_id: project.id }),
    { approval_policy: "never" },
  );
  const newChat = (sessionId: string) =>
    post<{ id: string }>(serverPath(ServerPath.sessionChats, { session_id: sessionId }), {});
  // When each event's frame reached a client, by event id.
  const arrivals = new Map<number, number>();
  const openStream = async (sessionId: string) => {
    const client = new SessionStreamClient(
      server.url,
      serverPath(ServerPath.sessionStream, { session_id: sessionId }),
    );
    client.socket.on("message", (data) => {
      const frame = JSON.parse(data.toString()) as { type: string; event?: { id: number } };
      if (frame.type === "event") arrivals.set(frame.event!.id, Date.now());
    });
    await client.opened;
    return client;
  };
  const stream = await openStream(session.id);

  /** Posts a message and resolves when the stream shows its turn finished. */
  async function runTurn(
    chatId: string,
    agent: string,
    text: string,
    on: SessionStreamClient = stream,
  ): Promise<TurnTiming> {
    const started = performance.now();
    const postedAt = Date.now();
    const posted = await post<CreateMessageResponse>(
      serverPath(ServerPath.chatMessages, { chat_id: chatId }),
      { agent, text },
    );
    const answeredAt = Date.now();
    let messageId: string | undefined;
    const finished = (events: SessionEvent[]) => {
      for (const { event } of events) {
        if (event.type === "turn_started" && event.user_message_id === posted.message.id) {
          messageId ??= event.message_id;
        }
      }
      return (
        messageId !== undefined &&
        events.some(
          (event) => event.event.type === "turn_finished" && event.event.message_id === messageId,
        )
      );
    };
    await on.waitFor((client) => finished(client.events()), 60_000);
    const elapsed = performance.now() - started;
    const events = on
      .events()
      .filter((event) => "message_id" in event.event && event.event.message_id === messageId);
    const outcome = events.find((event) => event.event.type === "turn_finished");
    if (outcome?.event.type !== "turn_finished" || outcome.event.status !== "complete") {
      throw new Error(`${agent} turn did not complete: ${JSON.stringify(outcome?.event)}`);
    }
    const startedEvent = events.find((event) => event.event.type === "turn_started")!;
    const startedAt = Date.parse(startedEvent.created_at);
    const finishedAt = Date.parse(outcome.created_at);
    return {
      elapsed,
      events,
      phases: [
        answeredAt - postedAt,
        startedAt - postedAt,
        finishedAt - startedAt,
        (arrivals.get(outcome.id) ?? finishedAt) - finishedAt,
      ],
    };
  }

  async function timeTurns(chatId: string, agent: string, text: string): Promise<TurnTiming[]> {
    const timings: TurnTiming[] = [];
    for (let index = 0; index < WARMUP + TURNS; index += 1) {
      const timing = await runTurn(chatId, agent, text);
      if (index >= WARMUP) timings.push(timing);
    }
    return timings;
  }

  /** Statements the server sends for one turn, averaged over a few. */
  async function statementsPerTurn(chatId: string, agent: string, text: string): Promise<number> {
    counter.start();
    for (let index = 0; index < 5; index += 1) await runTurn(chatId, agent, text);
    return (await counter.stop()).count / 5;
  }

  try {
    const chat = await newChat(session.id);
    const nativeText = await timeTurns(chat.id, "deckhand", "say done");
    const nativeExecute = await timeTurns(chat.id, "deckhand", "execute echo hi");
    const acpReply = await timeTurns(chat.id, "scripted", "hello");
    const nativeStatements = await statementsPerTurn(chat.id, "deckhand", "say done");
    const nativeStatementTexts = [...counter.byText]
      .map(([text, count]): [string, number] => [text, count / 5])
      .sort((left, right) => right[1] - left[1]);
    const acpStatements = await statementsPerTurn(chat.id, "scripted", "hello");
    // The first turn of a session starts its ACP agent process (in the sandbox, when on).
    const acpFirstTurn: number[] = [];
    for (let index = 0; index < FIRST_TURNS; index += 1) {
      const fresh = await post<{ id: string }>(
        serverPath(ServerPath.projectSessions, { project_id: project.id }),
        { approval_policy: "never" },
      );
      const freshStream = await openStream(fresh.id);
      const freshChat = await newChat(fresh.id);
      acpFirstTurn.push((await runTurn(freshChat.id, "scripted", "hello", freshStream)).elapsed);
      await freshStream.close();
    }
    // Events per second: one long streamed answer, from the turn's first event to the last.
    const { elapsed, events } = await runTurn(chat.id, "deckhand", "stream a long answer");
    return {
      nativeText: nativeText.map((timing) => timing.elapsed),
      nativeExecute: nativeExecute.map((timing) => timing.elapsed),
      acpReply: acpReply.map((timing) => timing.elapsed),
      acpFirstTurn,
      nativePhases: nativeText.map((timing) => timing.phases),
      nativeStatements,
      nativeStatementTexts,
      acpStatements,
      streamed: {
        textEvents: events.filter((event) => event.event.type === "text").length,
        elapsed,
        events: events.length,
        persistedMs: Date.parse(events.at(-1)!.created_at) - Date.parse(events[0]!.created_at),
      },
    };
  } finally {
    await stream.close();
    await server.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** The bare model request a turn makes, straight to the fake model: its unavoidable part. */
async function timeModelRequests(text: string): Promise<number[]> {
  const times: number[] = [];
  for (let index = 0; index < WARMUP + TURNS; index += 1) {
    const started = performance.now();
    const response = await fetch(`${model.url}/v1/responses`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: "Bearer sk-bench" },
      body: JSON.stringify({
        model: "gpt-5-codex",
        stream: true,
        input: [{ type: "message", role: "user", content: text }],
      }),
    });
    await response.text();
    if (index >= WARMUP) times.push(performance.now() - started);
  }
  return times;
}

/**
 * The scripted agent's own prompt round trip: the agent process driven straight over stdio with
 * ACP's JSON-RPC (initialize, session/new, then prompts), no Deckhand in between.
 */
async function timeBareAcpPrompts(): Promise<number[]> {
  const [command, ...args] = scriptedAcpAgentCommand();
  const agent = spawn(command!, args, { cwd: repository.path, stdio: ["pipe", "pipe", "inherit"] });
  const waiting = new Map<number, (result: Record<string, unknown>) => void>();
  let pending = "";
  agent.stdout.on("data", (chunk: Buffer) => {
    pending += chunk.toString("utf8");
    const lines = pending.split("\n");
    pending = lines.pop() ?? "";
    for (const line of lines) {
      if (line.trim() === "") continue;
      const message = JSON.parse(line) as { id?: number; result?: Record<string, unknown> };
      if (message.id !== undefined && message.result !== undefined) {
        waiting.get(message.id)?.(message.result);
        waiting.delete(message.id);
      }
    }
  });
  let nextId = 0;
  const call = (method: string, params: unknown) =>
    new Promise<Record<string, unknown>>((resolveCall) => {
      nextId += 1;
      waiting.set(nextId, resolveCall);
      agent.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", id: nextId, method, params })}\n`);
    });
  try {
    await call("initialize", { protocolVersion: 1, clientCapabilities: {} });
    const created = await call("session/new", { cwd: repository.path, mcpServers: [] });
    const times: number[] = [];
    for (let index = 0; index < WARMUP + TURNS; index += 1) {
      const started = performance.now();
      await call("session/prompt", {
        sessionId: created.sessionId,
        prompt: [{ type: "text", text: "hello" }],
      });
      if (index >= WARMUP) times.push(performance.now() - started);
    }
    return times;
  } finally {
    agent.kill("SIGTERM");
  }
}

try {
  console.log(`agent turns through the server, ${TURNS} turns each, load average ${loadAverage()}`);
  // The anchors first, on fresh connections: a keep-alive connection idle through minutes of
  // server runs can be reset just as it is reused.
  const bareModel = median(await timeModelRequests("say done"));
  const bareAcp = median(await timeBareAcpPrompts());
  const on = await measureServer("auto");
  const off = await measureServer("none");

  const rows: [string, (figures: ServerFigures) => number[]][] = [
    ["native agent, text answer (1 model request)", (figures) => figures.nativeText],
    ["native agent, one execute call (2 model requests)", (figures) => figures.nativeExecute],
    ["scripted ACP agent, text answer", (figures) => figures.acpReply],
    ["scripted ACP agent, first turn of a new session", (figures) => figures.acpFirstTurn],
  ];
  console.log("(HTTP → task → backend → database → WebSocket), PGlite, sandbox on / off:");
  for (const [label, pick] of rows) {
    console.log(
      `  ${label.padEnd(52)} p50 ${round(median(pick(on)), 1)} / ${round(median(pick(off)), 1)} ms, p90 ${round(percentile(pick(on), 0.9), 1)} / ${round(percentile(pick(off), 0.9), 1)} ms`,
    );
  }
  console.log(`  bare model request to the fake model: p50 ${round(bareModel, 2)} ms`);
  console.log(`  scripted agent's own prompt round trip over stdio: p50 ${round(bareAcp, 2)} ms`);
  const phaseLabels = [
    "POST → its 202 answer",
    "POST → turn_started (HTTP, queue pickup)",
    "turn_started → turn_finished (backend)",
    "turn_finished → client (fan-out)",
  ];
  console.log("  a native text turn taken apart (median ms, sandbox on / off):");
  phaseLabels.forEach((label, index) => {
    const onMs = median(on.nativePhases.map((phases) => phases[index]!));
    const offMs = median(off.nativePhases.map((phases) => phases[index]!));
    console.log(`    ${label.padEnd(44)} ${onMs} / ${offMs}`);
  });
  console.log(
    `  SQL statements per turn: native text ${round(on.nativeStatements, 1)}, scripted ACP text ${round(on.acpStatements, 1)}`,
  );
  for (const [text, count] of on.nativeStatementTexts.slice(0, 12)) {
    console.log(`    ${String(count).padStart(5)}× per native text turn  ${text}`);
  }
  console.log(
    `  streamed answer: ${on.streamed.textEvents} text events in ${round(on.streamed.elapsed)} ms end to end → ${Math.round((on.streamed.events / on.streamed.elapsed) * 1000)} events/s to a WebSocket client (persisted between first and last event: ${on.streamed.persistedMs} ms)`,
  );

  reportFigure({
    id: "turn-native-server-work",
    label: "native agent text turn, server work beyond the model request",
    value: median(on.nativeText) - bareModel,
    unit: "ms",
    anchor: { label: "the bare model request", value: bareModel, unit: "ms" },
    comparison: { value: median(on.nativeText) / bareModel, unit: "×" },
    note: `turn p50 ${round(median(on.nativeText), 1)} ms; sandbox off ${round(median(off.nativeText) - bareModel, 1)} ms`,
  });
  reportFigure({
    id: "turn-acp-text",
    label: "scripted ACP agent text turn, end to end, p50",
    value: median(on.acpReply),
    unit: "ms",
    anchor: { label: "the agent's own prompt round trip", value: bareAcp, unit: "ms" },
    comparison: { value: median(on.acpReply) - bareAcp, unit: "+ms" },
    note: `sandbox off ${round(median(off.acpReply), 1)} ms`,
  });
  reportFigure({
    id: "turn-statements",
    label: "SQL statements per native text turn",
    value: on.nativeStatements,
    unit: "statements",
    note: `scripted ACP text turn ${round(on.acpStatements, 1)}`,
  });
  reportFigure({
    id: "sandbox-turn-execute",
    label: "sandbox's cost per native turn with one execute call (on − off, p50)",
    value: median(on.nativeExecute) - median(off.nativeExecute),
    unit: "ms",
    anchor: { label: "the turn with sandbox off", value: median(off.nativeExecute), unit: "ms" },
    comparison: { value: median(on.nativeExecute) / median(off.nativeExecute), unit: "×" },
  });
  reportFigure({
    id: "sandbox-turn-acp-start",
    label: "sandbox's cost on an ACP session's first turn (agent process start, on − off, p50)",
    value: median(on.acpFirstTurn) - median(off.acpFirstTurn),
    unit: "ms",
    anchor: {
      label: "the first turn with sandbox off",
      value: median(off.acpFirstTurn),
      unit: "ms",
    },
    comparison: { value: median(on.acpFirstTurn) / median(off.acpFirstTurn), unit: "×" },
  });

  const databaseUrl = databaseUrlFromEnvironment();
  if (databaseUrl === undefined) {
    reportSkipped({
      id: "turn-native-server-work-postgres",
      label: "agent turns on PostgreSQL",
      skipped: "set DATABASE_URL to include it",
    });
  } else {
    let database: PostgresTestDatabase | null = null;
    try {
      database = await createPostgresTestDatabase(databaseUrl);
      const onPostgres = await measureServer("auto", database.url);
      reportFigure({
        id: "turn-native-server-work-postgres",
        label: "native agent text turn, server work beyond the model request, PostgreSQL",
        value: median(onPostgres.nativeText) - bareModel,
        unit: "ms",
        anchor: { label: "the bare model request", value: bareModel, unit: "ms" },
        comparison: { value: median(onPostgres.nativeText) / bareModel, unit: "×" },
      });
      reportFigure({
        id: "turn-acp-text-postgres",
        label: "scripted ACP agent text turn, end to end, p50, PostgreSQL",
        value: median(onPostgres.acpReply),
        unit: "ms",
        anchor: { label: "the agent's own prompt round trip", value: bareAcp, unit: "ms" },
        comparison: { value: median(onPostgres.acpReply) - bareAcp, unit: "+ms" },
      });
    } finally {
      await database?.drop();
    }
  }
} finally {
  await model.close();
  repository.remove();
}
