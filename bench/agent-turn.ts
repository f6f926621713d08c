// Agent turns through the whole server, model time excluded: a user message posted over HTTP,
// queued as a task, run by the native agent (against a fake model that answers at once) or by
// the scripted ACP agent (a real child process speaking ACP), every event persisted and fanned
// out to a WebSocket client, until the client sees `turn_finished`. Beside each figure stands
// the work the turn cannot avoid, measured in the same run: the same model request sent
// straight to the fake model, and the same command run straight through the workspace agent.
// The second half measures events per second from the backend through the database to a
// WebSocket client, with a model answer streamed as thousands of text deltas.
//
//   node --conditions=source bench/agent-turn.ts [turns]
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { resolveServerConfig, startServer } from "@deckhand/server-app";
import {
  type CapturedRequest,
  createTempRepository,
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

const TURNS = Number(process.argv[2] ?? 40);
const WARMUP = 5;
const STREAMED_DELTAS = 5_000;
const UPSTREAM_KEY_ENV = "BENCH_FAKE_UPSTREAM_KEY";

const round = (value: number) => Math.round(value * 100) / 100;
const median = (values: number[]) => {
  const sorted = [...values].sort((left, right) => left - right);
  return sorted[Math.floor(sorted.length / 2)]!;
};
const percentile = (values: number[], fraction: number) => {
  const sorted = [...values].sort((left, right) => left - right);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))]!;
};

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

const dataDir = mkdtempSync(join(tmpdir(), "deckhand-bench-turn-"));
const repository = createTempRepository({ "README.md": "# bench\n" }, "deckhand-bench-turn-repo-");
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

/** Posts a message and resolves when the stream shows its turn finished; its events and ms. */
async function runTurn(agent: string, text: string) {
  const started = performance.now();
  const posted = await post<CreateMessageResponse>(
    serverPath(ServerPath.chatMessages, { chat_id: chat.id }),
    { agent, text },
  );
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
  await stream.waitFor((client) => finished(client.events()), 60_000);
  const elapsed = performance.now() - started;
  const events = stream
    .events()
    .filter((event) => "message_id" in event.event && event.event.message_id === messageId);
  const outcome = events.find((event) => event.event.type === "turn_finished")?.event;
  if (outcome?.type !== "turn_finished" || outcome.status !== "complete") {
    throw new Error(`${agent} turn did not complete: ${JSON.stringify(outcome)}`);
  }
  return { elapsed, events };
}

async function timeTurns(agent: string, text: string): Promise<number[]> {
  const times: number[] = [];
  for (let index = 0; index < WARMUP + TURNS; index += 1) {
    const { elapsed } = await runTurn(agent, text);
    if (index >= WARMUP) times.push(elapsed);
  }
  return times;
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

try {
  const nativeText = await timeTurns("deckhand", "say done");
  const nativeExecute = await timeTurns("deckhand", "execute echo hi");
  const acpReply = await timeTurns("scripted", "hello");
  const bareModel = await timeModelRequests("say done");

  // Events per second: one long streamed answer, from the turn's first event to the last.
  const { elapsed, events } = await runTurn("deckhand", "stream a long answer");
  const textEvents = events.filter((event) => event.event.type === "text").length;
  const firstAt = Date.parse(events[0]!.created_at);
  const lastAt = Date.parse(events.at(-1)!.created_at);

  const rows: [string, number[]][] = [
    ["native agent, text answer (1 model request)", nativeText],
    ["native agent, one execute call (2 model requests)", nativeExecute],
    ["scripted ACP agent, text answer", acpReply],
  ];
  const bare = median(bareModel);
  console.log(
    `agent turns through the server (HTTP → task → backend → database → WebSocket), ${TURNS} turns each, PGlite:`,
  );
  for (const [label, times] of rows) {
    console.log(
      `  ${label}: p50 ${round(median(times))} ms, p90 ${round(percentile(times, 0.9))} ms`,
    );
  }
  console.log(
    `  bare model request to the fake model: p50 ${round(bare)} ms → native text turn overhead ${round(median(nativeText) - bare)} ms per turn (${round(median(nativeText) / bare)}× the model request)`,
  );
  console.log(
    `  streamed answer: ${textEvents} text events in ${round(elapsed)} ms end to end → ${Math.round((events.length / elapsed) * 1000)} events/s to a WebSocket client (persisted between first and last event: ${lastAt - firstAt} ms)`,
  );
} finally {
  await stream.close();
  await server.close();
  await model.close();
  rmSync(dataDir, { recursive: true, force: true });
  repository.remove();
}
