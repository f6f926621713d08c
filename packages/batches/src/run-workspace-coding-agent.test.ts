// `codingAgent` steps end to end, without a container engine or a real agent: the testkit's fake
// Codex CLI, installed from a loopback release server by the renderer's own install lines, talks
// through a real model-provider proxy (in-memory token store) to the testkit's fake model.
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { ContainerRuntime } from "@deckhand/container-runtime";
import {
  createModelProxy,
  InMemoryModelTokenStore,
  InMemoryUsageRecorder,
  leaseModelProvider,
  type ModelProviderLease,
  verifyModelToken,
} from "@deckhand/model-proxy";
import {
  type FakeCodexRelease,
  type FakeModel,
  fakeCodexDirective,
  startFakeCodexRelease,
  startFakeModel,
  turn,
} from "@deckhand/testkit";
import {
  type BatchCodingAgentOptions,
  type BatchRunEvent,
  WireEnv,
  WireHeader,
  WirePath,
} from "@deckhand/wire";
import { type ServerType, serve } from "@hono/node-server";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { repositoryAt, specFrom, temporaryDirectory, testEnvironment } from "../test/support.ts";
import { checkoutWorkspace } from "./checkout-workspace.ts";
import type { ModelProviderAccess } from "./coding-agent-step.ts";
import type { ExecutionEnvironmentOptions } from "./execution-environment.ts";
import { loadRepositories } from "./repositories.ts";
import { resolveWorkspaces } from "./resolve-workspaces.ts";
import {
  type RunWorkspaceOptions,
  runWorkspace,
  type WorkspaceRunResult,
} from "./run-workspace.ts";
import { type CachedStepResult, MemoryStepCache, type StepCache } from "./step-cache.ts";

const VERSION = "0.0.1-fake";
/**
 * A model in the bundled catalog of codex 0.169, as a real codex needs (with another it falls
 * back to metadata that offers no apply_patch tool); the fake accepts any.
 */
const MODEL = "gpt-5.5";
/** The real key the proxy holds for its upstream (the fake model); no agent ever sees it. */
const UPSTREAM_KEY = "sk-fake-upstream-key-for-batches-0123";

/** A step cache that keeps every key and entry it was given, to look for the token in them. */
class RecordingCache implements StepCache {
  readonly inner = new MemoryStepCache();
  readonly puts: { key: string; result: CachedStepResult }[] = [];
  readonly gets: string[] = [];
  async get(key: string) {
    this.gets.push(key);
    return this.inner.get(key);
  }
  async put(key: string, result: CachedStepResult) {
    this.puts.push({ key, result: structuredClone(result) });
    await this.inner.put(key, result);
  }
}

let fake: FakeModel;
let release: FakeCodexRelease;
let tokens: InMemoryModelTokenStore;
let usage: InMemoryUsageRecorder;
let proxyOrigin: string;
let proxyServer: ServerType;
/** Every request the proxy received: its job id header and whether it carried a bearer token. */
let proxySaw: { jobId: string | null; bearer: boolean; path: string }[];

beforeAll(async () => {
  fake = await startFakeModel();
  release = await startFakeCodexRelease({ version: VERSION });
  tokens = new InMemoryModelTokenStore();
  usage = new InMemoryUsageRecorder();
  const proxy = createModelProxy({
    upstreams: { codex: { kind: "openai", baseUrl: `${fake.url}/v1`, apiKey: UPSTREAM_KEY } },
    tokens,
    usage,
    rateLimit: false,
  });
  proxyServer = await new Promise<ServerType>((resolveServer) => {
    const instance = serve(
      {
        fetch: (request: Request) => {
          proxySaw.push({
            jobId: request.headers.get(WireHeader.jobId),
            bearer: /^Bearer /.test(request.headers.get(WireHeader.authorization) ?? ""),
            path: new URL(request.url).pathname,
          });
          return proxy.fetch(request);
        },
        hostname: "127.0.0.1",
        port: 0,
      },
      () => resolveServer(instance),
    );
  });
  proxyOrigin = `http://127.0.0.1:${(proxyServer.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise<void>((resolveClose) => {
    proxyServer.close(() => resolveClose());
    if ("closeAllConnections" in proxyServer) proxyServer.closeAllConnections();
  });
  await release.close();
  await fake.close();
});

let scratch: ReturnType<typeof temporaryDirectory>;
let root: string;
let checkouts = 0;
/** Every lease the runs took, in order. */
let leases: ModelProviderLease[];

beforeEach(() => {
  scratch = temporaryDirectory();
  root = join(scratch.path, "code");
  repositoryAt(join(root, "github.com/acme/api"), { "README.md": "# api\n" });
  repositoryAt(join(root, "github.com/acme/web"), { "README.md": "# web\n" });
  fake.reset();
  proxySaw = [];
  usage.entries.length = 0;
  leases = [];
});
afterEach(() => scratch.remove());

/** The server's side: leases as `leaseModelProvider` over the proxy's token store. */
const modelProvider: ModelProviderAccess = {
  async lease(jobId) {
    const lease = await leaseModelProvider(
      { modelTokens: tokens, serverUrl: () => proxyOrigin },
      { jobId, ttlMs: 10 * 60_000 },
    );
    leases.push(lease);
    return lease;
  },
};

function codingAgentOptions(
  overrides: Partial<BatchCodingAgentOptions> = {},
): BatchCodingAgentOptions {
  return {
    versions: { codex: VERSION },
    models: { codex: MODEL },
    install_source: { kind: "release", base_url: release.baseUrl },
    ...overrides,
  };
}

function agentSpec(options: { env?: string; image?: string } = {}): string {
  return `
version: 3
name: greet
description: Greets
on:
  - repository: github.com/acme/api
  - repository: github.com/acme/web
steps:
  - codingAgent:
      type: codex
      prompt: Write a greeting for \${{ repository.name }} in GREETING.md
    image: ${options.image ?? "node:22"}
${options.env ?? ""}
changesetTemplate:
  title: Greet
  branch: greet
  commit:
    message: Greet
`;
}

/** Prints the token on stderr, as a careless agent might: what redaction must catch. */
const PRINT_TOKEN_ENV = "    env:\n      FAKE_CODEX_PRINT_TOKEN: '1'";

interface Run {
  result: WorkspaceRunResult;
  events: BatchRunEvent[];
  directory: string;
}

async function run(
  yaml: string,
  options: Partial<Omit<RunWorkspaceOptions, "environment" | "codingAgent">> &
    Pick<ExecutionEnvironmentOptions, "containerRuntime"> & {
      cache?: StepCache;
      repository?: string;
      /** config.json's codingAgent, undefined for none. */
      codingAgent?: BatchCodingAgentOptions | undefined;
      modelProvider?: ModelProviderAccess | undefined;
      containerAgentInstallDirectory?: string;
    } = {},
): Promise<Run> {
  const {
    codingAgent = codingAgentOptions(),
    modelProvider: access = modelProvider,
    containerRuntime,
    containerAgentInstallDirectory,
    ...rest
  } = options;
  const spec = specFrom(yaml);
  const repositories = await loadRepositories({ codeHosts: [{ type: "directory", path: root }] });
  const { workspaces } = await resolveWorkspaces(spec, { repositories });
  const workspace = workspaces.find(
    (candidate) => candidate.repository.name === (options.repository ?? "github.com/acme/api"),
  )!;
  checkouts += 1;
  const directory = join(scratch.path, `checkout-${checkouts}`);
  const checkout = await checkoutWorkspace(workspace, directory);
  const events: BatchRunEvent[] = [];
  const result = await runWorkspace({
    workspace,
    spec,
    checkout,
    runtime: "local",
    environment: testEnvironment(scratch.path, {
      outerEnvironment: { PATH: process.env.PATH, HOME: scratch.path },
      ...("modelProvider" in options && options.modelProvider === undefined
        ? {}
        : { modelProvider: access }),
      ...("codingAgent" in options && options.codingAgent === undefined ? {} : { codingAgent }),
      ...(containerRuntime !== undefined ? { containerRuntime } : {}),
      directories: {
        agentInstallDirectory: join(scratch.path, "agents"),
        ...(containerAgentInstallDirectory !== undefined ? { containerAgentInstallDirectory } : {}),
      },
    }),
    jobId: `batch-workspace:${checkouts}`,
    onEvent: (event) => events.push(event),
    cache: options.cache ?? new MemoryStepCache(),
    ...rest,
  });
  return { result, events, directory };
}

/** What the proxy answers a request made with `token` for `jobId`: 401 once it is revoked. */
async function proxyStatus(token: string, jobId: string): Promise<number> {
  const response = await fetch(`${proxyOrigin}${WirePath.modelProvider}/codex/responses`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      [WireHeader.authorization]: `Bearer ${token}`,
      [WireHeader.jobId]: jobId,
    },
    body: JSON.stringify({ model: MODEL, input: "hi", stream: true }),
  });
  await response.arrayBuffer();
  return response.status;
}

function expectNowhere(token: string, ...places: unknown[]): void {
  for (const place of places) expect(JSON.stringify(place)).not.toContain(token);
}

describe("codingAgent steps", () => {
  it("install the agent, run it through the proxy with a token minted for the job, and keep the token out of everything", async () => {
    fake.script([
      turn.text(`${fakeCodexDirective.write("GREETING.md", "hello github.com/acme/api\n")}\nDone.`),
    ]);
    const cache = new RecordingCache();
    const { result, events } = await run(agentSpec({ env: PRINT_TOKEN_ENV }), { cache });
    expect(result.error).toBeNull();
    expect(result.status).toBe("completed");
    expect(result.steps).toMatchObject([{ stepIndex: 0, outcome: "run", runtime: "local" }]);

    // Installed through the renderer's release path, then run on the templated prompt.
    expect(release.requests).toContain(
      `/rust-v${VERSION}/codex-${process.arch === "arm64" ? "aarch64" : "x86_64"}-${process.platform === "darwin" ? "apple-darwin" : "unknown-linux-musl"}.tar.gz`,
    );
    expect(result.steps[0]!.stderr).toContain(`deckhand: installing codex ${VERSION}`);
    const [modelRequest] = fake.requests;
    expect(JSON.stringify(modelRequest!.json)).toContain(
      "Write a greeting for github.com/acme/api in GREETING.md",
    );
    expect(modelRequest!.json).toMatchObject({ model: MODEL });
    // The upstream saw the proxy's key, never the job's token.
    expect(modelRequest!.headers.authorization).toBe(`Bearer ${UPSTREAM_KEY}`);

    // One lease for the job; the proxy saw its job id with the token, and attributed usage to it.
    expect(leases).toHaveLength(1);
    const [{ token, jobId }] = leases as [ModelProviderLease];
    expect(jobId).toBe(`batch-workspace:${checkouts}`);
    expect(proxySaw).toEqual([
      { jobId, bearer: true, path: `${WirePath.modelProvider}/codex/responses` },
    ]);
    expect((await usage.waitFor(1)).map((entry) => entry.jobId)).toEqual([jobId]);

    // The change is the agent's.
    expect(result.result!.files.map((file) => [file.status, file.path])).toEqual([
      ["added", "GREETING.md"],
    ]);
    expect(result.result!.diff).toContain("+hello github.com/acme/api");
    // The agent's JSON lines are the step's output.
    expect(result.steps[0]!.stdout).toContain('"type":"turn.completed"');

    // The agent printed its token; every copy Deckhand keeps or sends shows the marker.
    expect(result.steps[0]!.stderr).toContain("fake codex: using token [REDACTED]");
    expect(
      events.some(
        (event) => event.type === "step_output" && event.text.includes("using token [REDACTED]"),
      ),
    ).toBe(true);
    expect(cache.puts).toHaveLength(1);
    expectNowhere(token, events, result, cache.puts, cache.gets);
    expectNowhere(jobId, cache.puts, cache.gets);

    // Revoked once the run ended.
    expect(await proxyStatus(token, jobId)).toBe(401);
    expect(tokens.records().find((record) => record.jobId === jobId)?.revokedAt).toBeInstanceOf(
      Date,
    );
  });

  it("are cached under a key without the token or the job id: a re-run as another job leases nothing", async () => {
    fake.script([turn.text(fakeCodexDirective.write("GREETING.md", "hi\n"))]);
    const cache = new RecordingCache();
    const first = await run(agentSpec(), { cache, jobId: "job-first" });
    expect(first.result.status).toBe("completed");
    const second = await run(agentSpec(), { cache, jobId: "job-second" });
    expect(second.result.status).toBe("completed");
    expect(second.result.steps).toMatchObject([{ outcome: "cached" }]);
    expect(second.result.result!.diff).toBe(first.result.result!.diff);
    expect(readFileSync(join(second.directory, "GREETING.md"), "utf8")).toBe("hi\n");
    // The key both runs looked up is the same; only the first run minted a token.
    expect(new Set(cache.gets).size).toBe(1);
    expect(leases.map((lease) => lease.jobId)).toEqual(["job-first"]);
    expect(fake.requests).toHaveLength(1);
  });

  it("give two workspaces two tokens, each bound to its own job and revoked after its run", async () => {
    fake.script([
      turn.text(fakeCodexDirective.write("GREETING.md", "api\n")),
      turn.text(fakeCodexDirective.write("GREETING.md", "web\n")),
    ]);
    const api = await run(agentSpec(), { jobId: "job-api" });
    const web = await run(agentSpec(), { jobId: "job-web", repository: "github.com/acme/web" });
    expect([api.result.status, web.result.status]).toEqual(["completed", "completed"]);
    expect(leases.map((lease) => lease.jobId)).toEqual(["job-api", "job-web"]);
    expect(leases[0]!.token).not.toBe(leases[1]!.token);
    expect(proxySaw.map((request) => request.jobId)).toEqual(["job-api", "job-web"]);
    expect(web.result.result!.diff).toContain("+web");
    // A token is good for its own job only, and neither is good any more.
    expect(await proxyStatus(leases[0]!.token, "job-web")).toBe(401);
    expect(await proxyStatus(leases[0]!.token, "job-api")).toBe(401);
    expect(await proxyStatus(leases[1]!.token, "job-web")).toBe(401);
  });

  it("revoke the token when the agent fails, and keep it out of the error", async () => {
    fake.script([turn.text(fakeCodexDirective.fail("the build is broken"))]);
    const { result, events } = await run(agentSpec({ env: PRINT_TOKEN_ENV }));
    expect(result.status).toBe("failed");
    expect(result.error).toMatch(/^step 0 failed with exit code 1: /);
    expect(result.error).toContain("fake codex: the build is broken");
    expect(result.error).toContain("using token [REDACTED]");
    const [{ token, jobId }] = leases as [ModelProviderLease];
    expectNowhere(token, result, events);
    expect(await proxyStatus(token, jobId)).toBe(401);
  });

  it("revoke the token when the run is cancelled while the agent waits for the model", async () => {
    fake.script([turn.hang()]);
    const controller = new AbortController();
    const running = run(agentSpec(), { signal: controller.signal });
    await fake.waitForRequests(1);
    // The token is live while the agent works.
    const [{ token, jobId }] = leases as [ModelProviderLease];
    expect((await verifyModelToken(tokens, token, jobId)).ok).toBe(true);
    controller.abort();
    const { result, events } = await running;
    expect(result.status).toBe("cancelled");
    expect(events.at(-1)).toMatchObject({ type: "workspace_finished", status: "cancelled" });
    expect(await proxyStatus(token, jobId)).toBe(401);
  });

  it("revoke the token when the workspace times out", async () => {
    fake.script([turn.hang()]);
    const { result } = await run(agentSpec(), { timeoutMs: 3000 });
    expect(result.status).toBe("timed_out");
    const [{ token, jobId }] = leases as [ModelProviderLease];
    expect(await proxyStatus(token, jobId)).toBe(401);
  });

  it("fail, naming what to set, when the run has no version or model for the agent type", async () => {
    const { result } = await run(agentSpec(), {
      codingAgent: codingAgentOptions({ versions: {}, models: { claude: "x" } }),
    });
    expect(result.status).toBe("failed");
    expect(result.error).toBe(
      `step 0 failed: the codex coding agent is not configured for this run: set codingAgent.versions["codex"] (the codex version to install, e.g. 0.169.0), codingAgent.models["codex"] (the model codex asks the proxy for) in config.json or the run's coding_agent options`,
    );
    expect(leases).toEqual([]);
    expect(fake.requests).toEqual([]);

    const unconfigured = await run(agentSpec(), { codingAgent: undefined });
    expect(unconfigured.result.error).toContain('codingAgent.versions["codex"]');
    expect(unconfigured.result.error).toContain('codingAgent.install_sources["codex"]');
  });

  it("fail, naming what to pass, without model-provider access or a job id", async () => {
    const { result } = await run(agentSpec(), { modelProvider: undefined, jobId: undefined });
    expect(result.status).toBe("failed");
    expect(result.error).toBe(
      "step 0 failed: codingAgent steps reach models only through Deckhand's model-provider proxy, with a token minted for the workspace job: pass modelProvider (model-provider access for the job) and jobId (the workspace job's id) in runWorkspace's options",
    );
  });

  it("run in a container with the host's network and the token passed by name, never in the arguments", async () => {
    fake.script([turn.text(fakeCodexDirective.write("GREETING.md", "boxed\n"))]);
    const log = join(scratch.path, "container.log");
    const cli = fileURLToPath(new URL("./fake-container-cli.cjs", import.meta.url));
    const runtime: ContainerRuntime = {
      kind: "podman",
      binary: process.execPath,
      globalArgs: [cli, "--log", log],
      runArgs: [],
      version: "fake",
      rootless: false,
      restrictedHost: false,
    };
    const yaml = agentSpec().replace(
      "changesetTemplate:",
      "  - run: echo plain > plain.txt\n    image: busybox\nchangesetTemplate:",
    );
    const { result } = await run(yaml, {
      runtime: "container",
      containerRuntime: runtime,
      containerAgentInstallDirectory: join(scratch.path, "container-agents"),
    });
    expect(result.error).toBeNull();
    expect(result.steps.map((step) => [step.outcome, step.runtime])).toEqual([
      ["run", "container"],
      ["run", "container"],
    ]);
    expect(result.result!.files.map((file) => file.path)).toEqual(["GREETING.md", "plain.txt"]);
    const runs = readFileSync(log, "utf8")
      .split("\n")
      .filter((line) => line !== "")
      .map((line) => JSON.parse(line) as { command: string; args: string[] })
      .filter((entry) => entry.command === "run");
    const flag = (args: string[], name: string) => args[args.indexOf(name) + 1];
    const script = (args: string[]) => args.at(-1)!;
    // The platform probe, the agent step, then the plain step's bash probe and the step itself.
    expect(runs.map((entry) => script(entry.args).split("\n")[0])).toEqual([
      "uname -m; if ls /lib/ld-musl-* >/dev/null 2>&1; then echo musl; else echo glibc; fi",
      "#!/bin/sh",
      "exit 0",
      "echo plain > plain.txt",
    ]);
    const agent = runs[1]!;
    const plain = runs[3]!;
    expect(flag(agent.args, "--network")).toBe("host");
    expect(flag(agent.args, "--entrypoint")).toBe("/bin/sh");
    expect(flag(plain.args, "--network")).toBe("none");
    expect(agent.args).toContain(WireEnv.modelProviderToken);
    expect(agent.args).toContain(WireEnv.jobId);
    const [{ token, jobId }] = leases as [ModelProviderLease];
    expectNowhere(token, runs);
    expect(proxySaw.map((request) => request.jobId)).toEqual([jobId]);
    expect(await proxyStatus(token, jobId)).toBe(401);
  });
});

// The real Codex CLI, opt-in: it is not a dependency of the repository. Install it anywhere and
// name its binary, e.g.
//   npm install --prefix /tmp/codex @openai/codex@0.169.0
//   DECKHAND_TEST_CODEX_BIN=/tmp/codex/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex
// The binary is served as a release archive and installed by the step like any codex release.
const codexBinary = process.env.DECKHAND_TEST_CODEX_BIN;

describe.skipIf(codexBinary === undefined)("a codingAgent step with the real Codex CLI", () => {
  let realRelease: FakeCodexRelease;

  beforeAll(async () => {
    const version = /^codex-cli (\S+)$/m.exec(
      spawnSync(codexBinary!, ["--version"], { encoding: "utf8" }).stdout,
    )?.[1];
    if (version === undefined) throw new Error(`${codexBinary} --version printed no version`);
    realRelease = await startFakeCodexRelease({ version, binary: codexBinary! });
  });
  afterAll(() => realRelease?.close());

  it("installs the binary from a release archive and applies the model's patch through the proxy", async () => {
    fake.script([
      turn.customToolCall(
        "apply_patch",
        "*** Begin Patch\n*** Add File: GREETING.md\n+hello from codex\n*** End Patch\n",
      ),
      turn.text("Added GREETING.md."),
    ]);
    const { result, events } = await run(agentSpec(), {
      codingAgent: codingAgentOptions({
        versions: { codex: realRelease.version },
        install_source: { kind: "release", base_url: realRelease.baseUrl },
      }),
      timeoutMs: 120_000,
    });
    expect(result.error).toBeNull();
    expect(result.status).toBe("completed");
    expect(result.result!.diff).toContain("+hello from codex");
    const [{ token, jobId }] = leases as [ModelProviderLease];
    expect(proxySaw.length).toBeGreaterThanOrEqual(2);
    expect(proxySaw.every((request) => request.jobId === jobId && request.bearer)).toBe(true);
    expectNowhere(token, events, result);
    expect(await proxyStatus(token, jobId)).toBe(401);
  }, 180_000);
});
