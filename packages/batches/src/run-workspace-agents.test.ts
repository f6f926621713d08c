// Gemini CLI and opencode as `codingAgent` steps end to end, without a container engine or the
// real CLIs: the testkit's fakes, which honour each CLI's current contract (gemini's code-split
// bundle, its headless auth and trust checks; opencode's state under the XDG directories and its
// outside lookups), are installed from loopback release servers by the renderer's own install
// lines and talk through a real model-provider proxy to the testkit's fake model.
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import {
  createModelProxy,
  InMemoryModelTokenStore,
  InMemoryUsageRecorder,
  leaseModelProvider,
} from "@deckhand/model-proxy";
import {
  defaultResponder,
  type FakeGeminiRelease,
  type FakeModel,
  type FakeOpencodeRelease,
  fakeCodexDirective,
  renderTurn,
  startFakeGeminiRelease,
  startFakeModel,
  startFakeOpencodeRelease,
  turn,
} from "@deckhand/testkit";
import type { BatchCodingAgentOptions, BatchRunEvent } from "@deckhand/wire";
import { type ServerType, serve } from "@hono/node-server";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { repositoryAt, specFrom, temporaryDirectory, testEnvironment } from "../test/support.ts";
import { parseAgentTranscript } from "./agent-transcript.ts";
import { checkoutWorkspace } from "./checkout-workspace.ts";
import type { ModelProviderAccess } from "./coding-agent-step.ts";
import { loadRepositories } from "./repositories.ts";
import { resolveWorkspaces } from "./resolve-workspaces.ts";
import { runWorkspace, type WorkspaceRunResult } from "./run-workspace.ts";
import { MemoryStepCache } from "./step-cache.ts";

const GEMINI_VERSION = "0.61.0";
const OPENCODE_VERSION = "1.18.33";
const UPSTREAM_KEY = "AIza-fake-upstream-key-for-agents-0123";

let fake: FakeModel;
let gemini: FakeGeminiRelease;
let opencode: FakeOpencodeRelease;
let tokens: InMemoryModelTokenStore;
let usage: InMemoryUsageRecorder;
let proxyOrigin: string;
let proxyServer: ServerType;

beforeAll(async () => {
  fake = await startFakeModel();
  gemini = await startFakeGeminiRelease({ version: GEMINI_VERSION });
  opencode = await startFakeOpencodeRelease({ version: OPENCODE_VERSION });
  tokens = new InMemoryModelTokenStore();
  usage = new InMemoryUsageRecorder();
  const proxy = createModelProxy({
    upstreams: {
      gemini: { kind: "gemini", baseUrl: fake.url, apiKey: UPSTREAM_KEY },
      opencode: { kind: "openai", baseUrl: `${fake.url}/v1`, apiKey: UPSTREAM_KEY },
    },
    tokens,
    usage,
    rateLimit: false,
  });
  proxyServer = await new Promise<ServerType>((resolveServer) => {
    const instance = serve({ fetch: proxy.fetch, hostname: "127.0.0.1", port: 0 }, () =>
      resolveServer(instance),
    );
  });
  proxyOrigin = `http://127.0.0.1:${(proxyServer.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise<void>((resolveClose) => {
    proxyServer.close(() => resolveClose());
    if ("closeAllConnections" in proxyServer) proxyServer.closeAllConnections();
  });
  await Promise.all([gemini.close(), opencode.close(), fake.close()]);
});

let scratch: ReturnType<typeof temporaryDirectory>;
let root: string;
let runs = 0;

beforeEach(() => {
  scratch = temporaryDirectory();
  root = join(scratch.path, "code");
  repositoryAt(join(root, "github.com/acme/api"), { "README.md": "# api\n" });
  repositoryAt(join(root, "github.com/acme/web"), { "README.md": "# web\n" });
  fake.reset();
  gemini.requests.length = 0;
  gemini.hold(false);
  opencode.requests.length = 0;
  usage.entries.length = 0;
});
afterEach(() => scratch.remove());

const modelProvider: ModelProviderAccess = {
  lease: (jobId) =>
    leaseModelProvider(
      { modelTokens: tokens, serverUrl: () => proxyOrigin },
      { jobId, ttlMs: 10 * 60_000 },
    ),
};

function options(): BatchCodingAgentOptions {
  return {
    versions: { gemini: GEMINI_VERSION, opencode: OPENCODE_VERSION },
    models: { gemini: "gemini-2.5-pro", opencode: "gpt-5.5" },
    install_sources: {
      gemini: { kind: "release", base_url: gemini.baseUrl },
      opencode: { kind: "release", base_url: opencode.baseUrl },
    },
  };
}

/** The environment the agents run in: their installs in the scratch directory. */
function agentsEnvironment(codingAgent: BatchCodingAgentOptions) {
  return testEnvironment(scratch.path, {
    outerEnvironment: { PATH: process.env.PATH, HOME: scratch.path },
    modelProvider,
    codingAgent,
    directories: { agentInstallDirectory: join(scratch.path, "agents") },
  });
}

const spec = (type: string) => `
version: 3
name: greet
description: Greets
on:
  - repository: github.com/acme/api
  - repository: github.com/acme/web
steps:
  - codingAgent:
      type: ${type}
      prompt: Write a greeting for \${{ repository.name }} in GREETING.md
    image: node:22
changesetTemplate:
  title: Greet
  branch: greet
  commit:
    message: Greet
`;

interface Run {
  result: WorkspaceRunResult;
  events: BatchRunEvent[];
}

/** Runs one workspace locally, with the scratch directory as HOME (shared by every run). */
async function run(
  type: string,
  repository: string,
  onEvent: (event: BatchRunEvent) => void = () => {},
): Promise<Run> {
  const parsed = specFrom(spec(type));
  const repositories = await loadRepositories({ codeHosts: [{ type: "directory", path: root }] });
  const { workspaces } = await resolveWorkspaces(parsed, { repositories });
  const workspace = workspaces.find((candidate) => candidate.repository.name === repository)!;
  runs += 1;
  const checkout = await checkoutWorkspace(workspace, join(scratch.path, `checkout-${runs}`));
  const events: BatchRunEvent[] = [];
  const result = await runWorkspace({
    workspace,
    spec: parsed,
    checkout,
    runtime: "local",
    environment: agentsEnvironment(options()),
    jobId: `job-${runs}`,
    onEvent: (event) => {
      events.push(event);
      onEvent(event);
    },
    cache: new MemoryStepCache(),
    timeoutMs: 120_000,
  });
  return { result, events };
}

/** Resolves once `check` holds, looking again on every turn of the event loop. */
function until(check: () => boolean, what: string, timeoutMs = 60_000): Promise<void> {
  return new Promise((resolve, reject) => {
    const deadline = Date.now() + timeoutMs;
    const poll = () => {
      if (check()) resolve();
      else if (Date.now() > deadline) reject(new Error(`timed out waiting for ${what}`));
      else setTimeout(poll, 10);
    };
    poll();
  });
}

describe("a gemini codingAgent step", () => {
  it("installs the code-split bundle and runs headless through the proxy with API-key auth, trust and no usage statistics", async () => {
    fake.script([
      turn.text(`${fakeCodexDirective.write("GREETING.md", "hello from gemini\n")}\nDone.`, {
        usage: { input: 30, output: 9 },
      }),
    ]);
    const { result } = await run("gemini", "github.com/acme/api");
    expect(result.error).toBeNull();
    expect(result.status).toBe("completed");
    expect(gemini.requests).toEqual([`/v${GEMINI_VERSION}/gemini-cli-bundle.zip`]);
    expect(result.result!.diff).toContain("+hello from gemini");

    // The proxy forwarded Gemini's wire format with the upstream key and recorded its usage.
    const [request] = fake.requests;
    expect(request!.url).toBe("/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse");
    expect(request!.headers["x-goog-api-key"]).toBe(UPSTREAM_KEY);
    // Usage statistics are off: no installation id rides along.
    expect(request!.headers["x-gemini-api-privileged-user-id"]).toBeUndefined();
    const [entry] = await usage.waitFor(1);
    expect(entry).toMatchObject({
      agentType: "gemini",
      endpoint: "stream_generate_content",
      inputTokens: 30,
      outputTokens: 9,
    });

    // The transcript reads gemini's stream-json; its state never touched the runner's HOME.
    const transcript = parseAgentTranscript("gemini", result.steps[0]!.stdout);
    expect(transcript.entries).toEqual([
      { kind: "tool_call", text: "write_file", detail: '{"file_path":"GREETING.md"}' },
      { kind: "tool_result", text: "Wrote GREETING.md", detail: null },
      { kind: "message", text: "Done.", detail: null },
    ]);
    expect(transcript.usage).toEqual({
      input_tokens: 30,
      cached_input_tokens: 0,
      output_tokens: 9,
    });
    expect(existsSync(join(scratch.path, ".gemini"))).toBe(false);
  });

  it("is downloaded once when two workspaces install the same version at the same time", async () => {
    fake.script([
      turn.text(fakeCodexDirective.write("GREETING.md", "one\n")),
      turn.text(fakeCodexDirective.write("GREETING.md", "two\n")),
    ]);
    gemini.hold(true);
    let waited = false;
    const running = [
      run("gemini", "github.com/acme/api", (event) => {
        if (event.type === "step_output" && event.text.includes("waiting for another step")) {
          waited = true;
        }
      }),
    ];
    await until(() => gemini.held() === 1, "the first download");
    running.push(
      run("gemini", "github.com/acme/web", (event) => {
        if (event.type === "step_output" && event.text.includes("waiting for another step")) {
          waited = true;
        }
      }),
    );
    await until(() => waited || gemini.held() > 1, "the second install to wait or download");
    gemini.letGo();
    const results = await Promise.all(running);
    expect(results.map(({ result }) => result.status)).toEqual(["completed", "completed"]);
    expect(gemini.requests).toEqual([`/v${GEMINI_VERSION}/gemini-cli-bundle.zip`]);
    expect(waited).toBe(true);
  });
});

describe("an opencode codingAgent step", () => {
  it("gives two concurrent jobs their own state, reads its JSON events and looks nothing up outside", async () => {
    fake.script([
      turn.text(`${fakeCodexDirective.write("GREETING.md", "hi\n")}\nGreeted.`, {
        usage: { input: 20, output: 4, cachedInput: 5 },
      }),
      turn.text(`${fakeCodexDirective.write("GREETING.md", "hi\n")}\nGreeted.`, {
        usage: { input: 20, output: 4, cachedInput: 5 },
      }),
    ]);
    // Both agents are running, each waiting on the model, before either gets an answer.
    const letGo = fake.hold();
    const running = [
      run("opencode", "github.com/acme/api"),
      run("opencode", "github.com/acme/web"),
    ];
    let settled = 0;
    for (const pending of running) void pending.finally(() => settled++);
    await until(() => fake.requests.length === 2 || settled > 0, "both agents to ask the model");
    letGo();
    const results = await Promise.all(running);
    for (const { result } of results) {
      expect(result.error).toBeNull();
      expect(result.status).toBe("completed");
      const [step] = result.steps;
      expect(step!.stderr).not.toContain("would fetch");
      expect(parseAgentTranscript("opencode", step!.stdout)).toEqual({
        type: "opencode",
        entries: [
          {
            kind: "tool_call",
            text: "write GREETING.md",
            detail: expect.stringMatching(/^\{"filePath":".*GREETING\.md"\}\nWrote the file$/),
          },
          { kind: "message", text: "Greeted.", detail: null },
        ],
        usage: { input_tokens: 15, cached_input_tokens: 5, output_tokens: 4 },
      });
    }
    expect(fake.requests.map((request) => request.path)).toEqual([
      "/v1/chat/completions",
      "/v1/chat/completions",
    ]);
    // Nothing of opencode's under the runner's HOME, and each step's state went with the step.
    expect(existsSync(join(scratch.path, ".local"))).toBe(false);
    expect(readdirSync(scratch.path).filter((name) => name.startsWith("."))).toEqual([]);
  });
});

// The real Gemini CLI, opt-in: it is not a dependency of the repository. Install it anywhere and
// name its bundle directory, e.g.
//   npm install --prefix /tmp/gemini @google/gemini-cli@0.61.0
//   DECKHAND_TEST_GEMINI_BUNDLE=/tmp/gemini/node_modules/@google/gemini-cli/bundle
// The bundle is served as a release (`gemini-cli-bundle.zip`) and installed by the step like any
// gemini release; it then talks to the fake model through the proxy.
const geminiBundle = process.env.DECKHAND_TEST_GEMINI_BUNDLE;

describe.skipIf(geminiBundle === undefined)("a codingAgent step with the real Gemini CLI", () => {
  let real: FakeGeminiRelease;

  beforeAll(async () => {
    const version = spawnSync(process.execPath, [join(geminiBundle!, "gemini.js"), "--version"], {
      encoding: "utf8",
    }).stdout.trim();
    if (!/^\d+\.\d+\.\d+/.test(version)) {
      throw new Error(`${geminiBundle}/gemini.js --version printed no version`);
    }
    real = await startFakeGeminiRelease({ version, bundleDirectory: geminiBundle! });
  });
  afterAll(() => real?.close());

  it("installs the release bundle and writes the model's file through the proxy", async () => {
    fake.respondWith(undefined);
    const seen: string[] = [];
    const answers = [
      turn.functionCall("write_file", { file_path: "GREETING.md", content: "hello from gemini\n" }),
      turn.text("Added GREETING.md."),
    ];
    let next = 0;
    fake.respondWith((request) => {
      seen.push(`${request.method} ${request.url}`);
      if (request.api === "gemini_stream_generate_content" && next < answers.length) {
        return renderTurn(request.api, answers[next++]!, {
          model: "gemini-2.5-pro",
          sequence: next,
        });
      }
      return defaultResponder(request);
    });
    const parsed = specFrom(spec("gemini"));
    const repositories = await loadRepositories({
      codeHosts: [{ type: "directory", path: root }],
    });
    const { workspaces } = await resolveWorkspaces(parsed, { repositories });
    const workspace = workspaces.find(
      (candidate) => candidate.repository.name === "github.com/acme/api",
    )!;
    const checkout = await checkoutWorkspace(workspace, join(scratch.path, "checkout-real"));
    const result = await runWorkspace({
      workspace,
      spec: parsed,
      checkout,
      runtime: "local",
      environment: agentsEnvironment({
        ...options(),
        versions: { gemini: real.version },
        install_sources: { gemini: { kind: "release", base_url: real.baseUrl } },
      }),
      jobId: "job-real-gemini",
      cache: new MemoryStepCache(),
      timeoutMs: 240_000,
    });
    expect(result.error, seen.join("\n")).toBeNull();
    expect(result.result!.diff).toContain("+hello from gemini");
    expect(real.requests).toEqual([`/v${real.version}/gemini-cli-bundle.zip`]);
    for (const request of fake.requests) {
      expect(request.headers["x-goog-api-key"]).toBe(UPSTREAM_KEY);
      expect(request.headers["x-gemini-api-privileged-user-id"]).toBeUndefined();
    }
    expect(existsSync(join(scratch.path, ".gemini"))).toBe(false);
  }, 300_000);
});

// The real opencode, opt-in: it is not a dependency of the repository. Install it anywhere and
// name its binary, e.g.
//   npm install --prefix /tmp/opencode opencode-ai@1.18.33
//   DECKHAND_TEST_OPENCODE_BIN=/tmp/opencode/node_modules/opencode-linux-x64/bin/opencode
// The step takes it as an installed binary (install source `installed`), checks its version and
// runs it, two jobs at once, against the fake model through the proxy.
const opencodeBinary = process.env.DECKHAND_TEST_OPENCODE_BIN;

describe.skipIf(opencodeBinary === undefined)("codingAgent steps with the real opencode", () => {
  it("runs two jobs at once, each with its own state, and writes the model's files", async () => {
    const version = spawnSync(opencodeBinary!, ["--version"], { encoding: "utf8" }).stdout.trim();
    const answers = new Map<string, number>();
    fake.respondWith((request) => {
      if (request.api !== "chat_completions") return defaultResponder(request);
      const body = JSON.stringify(request.json);
      // opencode asks for a title for the session on the side.
      if (body.includes("title generator")) {
        return renderTurn("chat_completions", turn.text("Greeting"), { model: "m", sequence: 0 });
      }
      // Each job's conversation: first the write, then the closing words.
      const repository = body.includes("acme/web") ? "web" : "api";
      const step = answers.get(repository) ?? 0;
      answers.set(repository, step + 1);
      const answer =
        step === 0
          ? // With a gpt-5 model opencode offers bash and apply_patch rather than write.
            turn.functionCall("bash", {
              command: `echo 'hello from opencode (${repository})' > GREETING.md`,
              description: "Writes the greeting",
            })
          : turn.text("Added GREETING.md.");
      return renderTurn("chat_completions", answer, { model: "gpt-5.5", sequence: step + 1 });
    });
    const runReal = async (repository: string) => {
      const parsed = specFrom(spec("opencode"));
      const repositories = await loadRepositories({
        codeHosts: [{ type: "directory", path: root }],
      });
      const { workspaces } = await resolveWorkspaces(parsed, { repositories });
      const workspace = workspaces.find((candidate) => candidate.repository.name === repository)!;
      runs += 1;
      const checkout = await checkoutWorkspace(workspace, join(scratch.path, `checkout-${runs}`));
      return runWorkspace({
        workspace,
        spec: parsed,
        checkout,
        runtime: "local",
        environment: agentsEnvironment({
          ...options(),
          versions: { opencode: version },
          install_sources: { opencode: { kind: "installed", path: opencodeBinary! } },
        }),
        jobId: `job-real-opencode-${runs}`,
        cache: new MemoryStepCache(),
        timeoutMs: 240_000,
      });
    };
    const results = await Promise.all([
      runReal("github.com/acme/api"),
      runReal("github.com/acme/web"),
    ]);
    for (const [index, result] of results.entries()) {
      expect(result.error).toBeNull();
      expect(result.result!.diff).toContain(`+hello from opencode (${["api", "web"][index]})`);
      const transcript = parseAgentTranscript("opencode", result.steps[0]!.stdout);
      expect(transcript.entries.map((entry) => entry.kind)).toContain("tool_call");
      expect(transcript.usage).not.toBeNull();
    }
    for (const request of fake.requests) {
      expect(request.headers.authorization).toBe(`Bearer ${UPSTREAM_KEY}`);
    }
    expect(existsSync(join(scratch.path, ".local"))).toBe(false);
  }, 300_000);
});
