// Native agent per-turn overhead, model time excluded. Each turn is a user message, a model
// response asking for one `execute` call (`echo hi`), the call through a real workspace agent,
// and a model response with the final text; the fake model answers at once. The same turns are
// then taken apart: the identical model requests sent straight with the model client, and the
// same command run straight through the tool. What the agent adds on top of those two is the
// loop's own cost: events, approvals, history, recording.
//
//   node --conditions=source bench/native-turn.ts [turns]
//
// It lives here, not in @deckhand/agent-backends, because it composes the workspace agent
// (@deckhand/workspace-agent) with the package, which only its tests depend on.
import { randomUUID } from "node:crypto";
import { mkdirSync, mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import {
  collectModelTurn,
  createNativeBackend,
  FileSessionRecorder,
  invokeTool,
  type NativeBackend,
  type ResponseItem,
  type SessionRecorder,
} from "@deckhand/agent-backends";
import { ProcessClient } from "@deckhand/process-manager";
import { type CapturedRequest, renderTurn, startFakeModel, turn } from "@deckhand/testkit";
import { resolveAgentConfig, startAgent } from "@deckhand/workspace-agent";
import { FileClient } from "@deckhand/workspace-files";
import { reportFigure } from "./support/figures.ts";

const TURNS = Number(process.argv[2] ?? 200);
const TURNS_PER_SESSION = 10;
const WARMUP_TURNS = 20;
const ROUNDS = 3;
const AGENT_TOKEN = "bench-agent-token";
const MODEL_TOKEN = "dmt_bench_model_token";

const root = realpathSync(mkdtempSync(join(tmpdir(), "deckhand-bench-native-")));
const worktree = join(root, "tree");
mkdirSync(worktree);
const quiet = new Writable({ write: (_chunk, _encoding, callback) => callback() });
const agent = await startAgent(
  resolveAgentConfig({ listen: "127.0.0.1:0", dir: root, token: AGENT_TOKEN, logLevel: "warn" }),
  { logDestination: quiet },
);
const fake = await startFakeModel();
let sequence = 0;
// A user message last asks for the command; a tool output last gets the final answer.
fake.respondWith((request: CapturedRequest) => {
  sequence += 1;
  const input = (request.json as { input: ResponseItem[] }).input;
  const last = input.at(-1);
  const next =
    last?.type === "message"
      ? turn.functionCall("execute", { command: "echo hi" }, { callId: `call_${sequence}` })
      : turn.text("The command printed hi.");
  return renderTurn("responses", next, { model: "gpt-5-codex", sequence });
});
const modelUrl = `${fake.url}/v1`;

const now = () => performance.now();

/** Runs `turns` agent turns, a fresh session every TURNS_PER_SESSION; ms per turn. */
async function agentTurns(turns: number, recorder?: SessionRecorder): Promise<number> {
  let backend: NativeBackend | undefined;
  const started = now();
  for (let index = 0; index < turns; index += 1) {
    if (index % TURNS_PER_SESSION === 0) {
      await backend?.dispose();
      backend = createNativeBackend({
        sessionId: randomUUID(),
        agent: "deckhand",
        chatId: randomUUID(),
        worktreePath: worktree,
        workspaceAgent: { url: agent.url, token: AGENT_TOKEN },
        modelProxy: { url: modelUrl, token: MODEL_TOKEN, jobId: "bench" },
        resumeSessionId: null,
        model: "gpt-5-codex",
        ...(recorder ? { recorder } : {}),
      });
    }
    let events = 0;
    const result = await backend!.prompt({
      messageId: randomUUID(),
      text: `Turn ${index}: run echo.`,
      onEvent: () => {
        events += 1;
      },
    });
    if (result.stopReason !== "end_turn" || events < 5) {
      throw new Error(`turn ${index} ended ${result.stopReason} after ${events} events`);
    }
  }
  await backend?.dispose();
  return (now() - started) / turns;
}

/** The model requests the agent made, sent again straight with the model client; ms per turn. */
async function modelAlone(requests: CapturedRequest[], turns: number): Promise<number> {
  const started = now();
  for (const request of requests) {
    const body = request.json as {
      model: string;
      instructions: string;
      input: ResponseItem[];
      tools: never[];
      include: string[];
    };
    await collectModelTurn({
      baseUrl: modelUrl,
      token: MODEL_TOKEN,
      jobId: "bench",
      model: body.model,
      instructions: body.instructions,
      input: body.input,
      tools: body.tools,
      include: body.include,
    });
  }
  return (now() - started) / turns;
}

/** The command run straight through the tool, as the agent runs it; ms per call. */
async function toolAlone(calls: number): Promise<number> {
  const chatId = randomUUID();
  const context = {
    processes: new ProcessClient({ baseUrl: agent.url, token: AGENT_TOKEN, chatId }),
    files: new FileClient({ baseUrl: agent.url, token: AGENT_TOKEN, root: worktree }),
    chatId,
    worktreeRoot: worktree,
    signal: new AbortController().signal,
  };
  const started = now();
  for (let index = 0; index < calls; index += 1) {
    const outcome = await invokeTool("execute", '{"command":"echo hi"}', context);
    if (!outcome.ok) throw new Error(outcome.output);
  }
  return (now() - started) / calls;
}

const median = (values: number[]) =>
  [...values].sort((left, right) => left - right)[Math.floor(values.length / 2)]!;

const recorder = new FileSessionRecorder(join(root, "recordings"));
await agentTurns(WARMUP_TURNS);
await toolAlone(WARMUP_TURNS);
const figures = {
  agent: [] as number[],
  recorded: [] as number[],
  model: [] as number[],
  tool: [] as number[],
};
for (let round = 0; round < ROUNDS; round += 1) {
  fake.requests.length = 0;
  figures.agent.push(await agentTurns(TURNS));
  const requests = fake.requests.slice();
  figures.model.push(await modelAlone(requests, TURNS));
  figures.tool.push(await toolAlone(TURNS));
  figures.recorded.push(await agentTurns(TURNS, recorder));
}
await recorder.close();

const agentMs = median(figures.agent);
const recordedMs = median(figures.recorded);
const modelMs = median(figures.model);
const toolMs = median(figures.tool);
const parts = modelMs + toolMs;
const fmt = (ms: number) => `${ms.toFixed(3)} ms`;
console.log(
  `native agent, ${TURNS} turns × (execute call + final text), median of ${ROUNDS} rounds`,
);
console.log(`  agent turn (no recorder)        ${fmt(agentMs)} per turn`);
console.log(`  agent turn (JSONL recorder)     ${fmt(recordedMs)} per turn`);
console.log(`  2 model requests alone          ${fmt(modelMs)} per turn`);
console.log(`  execute tool alone              ${fmt(toolMs)} per turn`);
console.log(`  loop overhead (agent − parts)   ${fmt(agentMs - parts)} per turn`);
console.log(`  loop overhead with recorder     ${fmt(recordedMs - parts)} per turn`);
console.log(`  ratio agent / (model + tool)    ${(agentMs / parts).toFixed(3)}`);
console.log(`  ratio agent / model alone       ${(agentMs / modelMs).toFixed(3)}`);
reportFigure({
  id: "native-loop-overhead",
  label: "native agent loop overhead per turn (execute + text, no server)",
  value: agentMs - parts,
  unit: "ms",
  anchor: { label: "model requests + tool alone", value: parts, unit: "ms" },
  comparison: { value: agentMs / parts, unit: "×" },
});

await fake.close();
await agent.close();
rmSync(root, { recursive: true, force: true });
