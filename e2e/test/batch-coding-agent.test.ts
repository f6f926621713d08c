// Issue #13, "a codingAgent step runs the fake agent CLI through the proxy with a minted token
// that is found nowhere it must not be and is revoked after": `deckhand up` as its own process
// with `modelUpstreams.codex` on the testkit's fake model and config.json's `codingAgent` naming
// the fake Codex CLI, served as a release by a loopback server. A batch run's codingAgent step
// installs the CLI, which asks the model through the server's model-provider proxy with the
// token minted for the workspace job. The CLI writes the request it sent to a file outside the
// workspace: that is how the test learns the token, to hunt it through every log line, stream
// frame, API response, database table and the changeset, and to see it refused after the run.
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type FakeCodexRelease,
  type FakeModel,
  fakeCodexDirective,
  startFakeCodexRelease,
  startFakeModel,
  turn,
} from "@deckhand/testkit";
import {
  type BatchStepDetail,
  type BatchWorkspace,
  ServerPath,
  type StoredBatchChangeset,
  serverPath,
  type UsageResponse,
  WireEnv,
  WireHeader,
  WirePath,
} from "@deckhand/wire";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type BatchServer,
  databaseBackends,
  generateRepositories,
  startBatchServer,
} from "./batch-server.ts";
import { repositoryRoot } from "./deckhand-up.ts";

const VERSION = "0.0.1-fake";
const MODEL = "gpt-5.5";
const REPOSITORY = "github.com/acme/api";
/** The key the proxy holds for its upstream, named by `apiKeyEnv`: no agent ever sees it. */
const UPSTREAM_KEY_ENV = "E2E_BATCH_CODEX_UPSTREAM_KEY";
const UPSTREAM_KEY = "sk-e2e-batch-codex-upstream-key-5e07b2";
const MARKER = "[REDACTED]";

/** What the fake CLI wrote about the request it sent the proxy (FAKE_CODEX_RECORD_REQUEST). */
interface RecordedRequest {
  url: string;
  headers: Record<string, string>;
}

// Version 3 wants an `image` on every step. The run uses `runtime: local`, so the step runs with
// sh on this machine (a step_runtime_fallback event says so): the install needs curl and tar,
// which the offline busybox image lacks, and what is under test here is the proxy and the token,
// not Podman (batch-container.test.ts is).
const spec = (recordFile: string) => `
version: 3
name: agent-greeting
description: A coding agent writes a greeting
on:
  - repository: ${REPOSITORY}
steps:
  - codingAgent:
      type: codex
      prompt: Write a greeting for \${{ repository.name }} in GREETING.md
    image: localhost/deckhand-test/busybox:latest
    env:
      # The fake CLI records its request (with the token) outside the workspace...
      FAKE_CODEX_RECORD_REQUEST: ${recordFile}
      # ...and prints the token on stderr, as a careless agent might: what redaction must catch.
      FAKE_CODEX_PRINT_TOKEN: "1"
      # ...and sends its DECKHAND_* variables to the model, as an agent that ran env would.
      FAKE_CODEX_SEND_ENVIRONMENT: "1"
changesetTemplate:
  title: Greet \${{ repository.name }}
  body: Written by a coding agent
  branch: agent-greeting
  commit:
    message: Greet
`;

describe.each(databaseBackends)("a codingAgent step through deckhand up on %s", (backend) => {
  let model: FakeModel;
  let release: FakeCodexRelease;
  let code: string;
  /** The server's HOME: nothing may be installed there (agents go to `<data-dir>/agents`). */
  let home: string;
  /** Outside every workspace: where the fake CLI records its request. */
  let records: string;
  let deckhand: BatchServer;
  let token: string;
  let jobId: string;

  beforeAll(async () => {
    model = await startFakeModel();
    release = await startFakeCodexRelease({ version: VERSION });
    code = generateRepositories([REPOSITORY]);
    home = mkdtempSync(join(tmpdir(), "deckhand-e2e-home-"));
    records = mkdtempSync(join(tmpdir(), "deckhand-e2e-records-"));
    deckhand = await startBatchServer({
      backend,
      config: {
        workspaceAgent: false,
        // Every line the server can log, so the hunt below has the most to look through.
        logLevel: "debug",
        codeHosts: [{ type: "directory", path: code }],
        batchConcurrency: 1,
        modelUpstreams: {
          codex: { kind: "openai", baseUrl: `${model.url}/v1`, apiKeyEnv: UPSTREAM_KEY_ENV },
        },
        codingAgent: {
          versions: { codex: VERSION },
          models: { codex: MODEL },
          // Per agent type, as an operator with a mirror for one agent sets it.
          install_sources: { codex: { kind: "release", base_url: release.baseUrl } },
        },
        // The step runs sandboxed, where only its workspace is writable: the directory the fake
        // CLI records its request in is made writable, as an operator shares a cache.
        sandbox: { writable: [records] },
      },
      env: { [UPSTREAM_KEY_ENV]: UPSTREAM_KEY, HOME: home },
    });
  });

  afterAll(async () => {
    await deckhand?.close();
    await release?.close();
    await model?.close();
    for (const directory of [code, home, records]) {
      if (directory) rmSync(directory, { recursive: true, force: true });
    }
  });

  it("installs the fake Codex CLI and runs it through the proxy with a token minted for the workspace job", async () => {
    model.script([
      turn.text(`${fakeCodexDirective.write("GREETING.md", `hello ${REPOSITORY}\n`)}\nDone.`),
    ]);
    const recordFile = join(records, "request.json");
    const { run, events } = await deckhand.runToEnd(
      {
        source: spec(recordFile),
        file: "agent.yaml",
        options: { runtime: "local" },
      },
      100_000,
    );
    expect(run.error).toBeNull();
    expect(run.status).toBe("completed");
    expect(run.stats).toMatchObject({ workspaces: 1, completed: 1, changesets: 1, steps_run: 1 });

    const [workspace] = (
      await deckhand.api<{ workspaces: BatchWorkspace[] }>(
        "GET",
        serverPath(ServerPath.batchRunWorkspaces, { batch_run_id: run.id }),
      )
    ).body.workspaces;
    expect(workspace).toMatchObject({ repository: REPOSITORY, state: "completed", error: null });
    jobId = `batch-workspace:${workspace!.id}`;

    // The step ran locally, as the run asked, although its image is named.
    expect(events).toContainEqual(
      expect.objectContaining({
        type: "step_runtime_fallback",
        step_index: 0,
        image: "localhost/deckhand-test/busybox:latest",
      }),
    );
    expect(events).toContainEqual(
      expect.objectContaining({ type: "step_started", runtime: "local", image: null }),
    );
    // The renderer's install path fetched the release for this machine.
    expect(release.requests).toHaveLength(1);
    expect(release.requests[0]).toMatch(
      new RegExp(`^/rust-v${VERSION.replaceAll(".", "\\.")}/codex-[a-z0-9_]+-[a-z-]+\\.tar\\.gz$`),
    );
    // ...into the server's data directory, not its user's home.
    expect(existsSync(join(deckhand.dataDir, "agents", "codex", VERSION, "bin", "codex"))).toBe(
      true,
    );
    expect(existsSync(join(home, ".deckhand"))).toBe(false);

    // What the CLI sent the proxy: the server's proxy URL, the job's id, and a minted token.
    const sent = JSON.parse(readFileSync(recordFile, "utf8")) as RecordedRequest;
    expect(sent.url).toBe(`${deckhand.server.url}${WirePath.modelProvider}/codex/responses`);
    expect(sent.headers[WireHeader.jobId]).toBe(jobId);
    token = /^Bearer (dhmp_\S+)$/.exec(sent.headers.authorization ?? "")?.[1] ?? "";
    expect(token).not.toBe("");

    // What the model saw: the proxy's request with the upstream key, never the token; the job
    // header stays with Deckhand (the proxy checked it against the token and drops it).
    expect(model.requests).toHaveLength(1);
    const [upstream] = model.requests;
    expect(upstream).toMatchObject({ method: "POST", path: "/v1/responses" });
    expect(upstream!.headers.authorization).toBe(`Bearer ${UPSTREAM_KEY}`);
    expect(upstream!.headers[WireHeader.jobId.toLowerCase()]).toBeUndefined();
    expect(upstream!.json).toMatchObject({ model: MODEL });
    expect(JSON.stringify(upstream!.json)).toContain(
      `Write a greeting for ${REPOSITORY} in GREETING.md`,
    );
    // The environment the agent sent the model: the proxy replaced the token and the job id.
    expect(upstream!.body).toContain(`${WireEnv.modelProviderToken}=${MARKER}`);
    expect(upstream!.body).toContain(`${WireEnv.jobId}=${MARKER}`);
    expect(upstream!.body).not.toContain(jobId);

    // Usage is the job's.
    const usagePath = `${ServerPath.usage}?job_id=${encodeURIComponent(jobId)}`;
    let usage = await deckhand.api<UsageResponse>("GET", usagePath);
    for (let attempt = 0; usage.body.usage.length === 0 && attempt < 50; attempt += 1) {
      await new Promise((resolveWait) => setTimeout(resolveWait, 100));
      usage = await deckhand.api<UsageResponse>("GET", usagePath);
    }
    expect(usage.status).toBe(200);
    expect(usage.body.job_id).toBe(jobId);
    expect(usage.body.usage).toMatchObject([
      {
        job_id: jobId,
        agent_type: "codex",
        endpoint: "responses",
        model: MODEL,
        status: 200,
        outcome: "completed",
      },
    ]);
    expect(usage.body.totals).toMatchObject({ requests: 1, input_tokens: 10, output_tokens: 5 });

    // The agent's change is the changeset.
    const detail = (
      await deckhand.api<BatchStepDetail>(
        "GET",
        serverPath(ServerPath.batchWorkspaceStep, { workspace_id: workspace!.id, step_index: "0" }),
      )
    ).body;
    expect(detail.step).toMatchObject({ outcome: "run", runtime: "local", exit_code: 0 });
    expect(detail.stderr).toContain(`deckhand: installing codex ${VERSION}`);
    expect(detail.stdout).toContain('"type":"turn.completed"');
    // The token the agent printed is in the step's log as the marker.
    expect(detail.stderr).toContain(`fake codex: using token ${MARKER}`);
    // The step detail names the job its usage is under, its environment with the token redacted,
    // and the agent's transcript read from its JSON lines.
    expect(detail.job_id).toBe(jobId);
    expect(detail.env).toMatchObject({
      FAKE_CODEX_RECORD_REQUEST: recordFile,
      // Its name says it may hold a credential: redacted whatever its value.
      FAKE_CODEX_PRINT_TOKEN: MARKER,
      [WireEnv.modelProviderToken]: MARKER,
    });
    expect(detail.command).toContain("codex");
    expect(detail.agent).toMatchObject({
      type: "codex",
      usage: { input_tokens: 10, output_tokens: 5 },
    });
    expect(detail.agent!.entries.map((entry) => entry.kind)).toContain("tool_call");
    const [changeset] = (
      await deckhand.api<{ changesets: StoredBatchChangeset[] }>(
        "GET",
        serverPath(ServerPath.batchRunChangesets, { batch_run_id: run.id }),
      )
    ).body.changesets;
    expect(changeset).toMatchObject({
      repository: REPOSITORY,
      title: `Greet ${REPOSITORY}`,
      branch: "agent-greeting",
      stats: { files: 1, insertions: 1, deletions: 0 },
    });
    expect(changeset!.diff).toContain("+++ b/GREETING.md");
    expect(changeset!.diff).toContain(`+hello ${REPOSITORY}`);
    expect(changeset!.diff).not.toContain(token);

    // Revoked once the workspace ended: the proxy refuses it, with the job it was minted for.
    const refused = await fetch(sent.url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        [WireHeader.authorization]: `Bearer ${token}`,
        [WireHeader.jobId]: jobId,
      },
      body: JSON.stringify({ model: MODEL, input: "hi", stream: true }),
    });
    const refusal = await refused.text();
    deckhand.responses.push(refusal);
    expect(refused.status).toBe(401);
    expect(model.requests).toHaveLength(1);
    // Refused because it was revoked, not for another reason the proxy also answers 401 to.
    const refusals = deckhand.server.output
      .filter((line) => line.includes('"msg":"model-provider request refused"'))
      .map((line) => JSON.parse(line) as { reason?: string });
    expect(refusals.map((line) => line.reason)).toEqual(["revoked"]);
  }, 120_000);

  it("leaves the token in no log line, stream frame, API response, table or changeset", async () => {
    expect(token, "the run above must have captured the token").toMatch(/^dhmp_/);
    expect(await deckhand.stop()).toEqual({ code: 0, signal: null });
    const dump = await deckhand.dumpDatabase();
    const frames = deckhand.streams.flatMap((stream) => stream.raw).join("\n");
    const responses = deckhand.responses.join("\n");
    const everywhere = [
      ["server log lines", deckhand.server.output.join("\n")],
      ["run stream frames", frames],
      ["API responses", responses],
      ["database tables", dump],
      ["upstream requests", JSON.stringify(model.requests)],
    ] as const;
    // The hunt has teeth: the printed token went, as the marker, where the step's output goes.
    expect(frames).toContain(`using token ${MARKER}`);
    expect(responses).toContain(`using token ${MARKER}`);
    expect(dump).toContain(`using token ${MARKER}`);
    // And what was looked through is the real thing: the job's token row, its usage, the diff.
    expect(dump).toMatch(new RegExp(`public\\.model_tokens: .*"job_id":"${jobId}"`));
    expect(dump).toMatch(new RegExp(`public\\.model_usage: .*"job_id":"${jobId}"`));
    expect(dump).toContain(`+hello ${REPOSITORY}`);
    for (const [where, text] of everywhere) {
      expect(text.includes(token), `the token found in ${where}`).toBe(false);
      expect(text.includes(UPSTREAM_KEY), `the upstream key found in ${where}`).toBe(
        where === "upstream requests",
      );
    }
    // Only the token's hash is stored, and its row says it was revoked.
    const tokenRows = /public\.model_tokens: (.*)/.exec(dump)?.[1] ?? "[]";
    const rows = (JSON.parse(tokenRows) as { job_id: string; revoked_at: unknown }[]).filter(
      (row) => row.job_id === jobId,
    );
    expect(rows).toHaveLength(1);
    expect(rows[0]!.revoked_at).not.toBeNull();
  });
});

// The same step on a `deckhand executor` (issue #13's follow-up): the server runs no workspace
// job itself (batchConcurrency 0); an executor on the shared PostgreSQL, given --server-url,
// mints the job's token into the shared database, and the server's proxy accepts it.
describe.runIf(databaseBackends.includes("postgres"))(
  "a codingAgent step on a deckhand executor with --server-url",
  () => {
    let model: FakeModel;
    let release: FakeCodexRelease;
    let code: string;
    let records: string;
    let executorDir: string;
    let deckhand: BatchServer;
    let executor: ChildProcess | undefined;
    const executorOutput: string[] = [];

    beforeAll(async () => {
      model = await startFakeModel();
      release = await startFakeCodexRelease({ version: VERSION });
      code = generateRepositories([REPOSITORY]);
      records = mkdtempSync(join(tmpdir(), "deckhand-e2e-records-"));
      executorDir = mkdtempSync(join(tmpdir(), "deckhand-e2e-executor-"));
      const codingAgent = {
        versions: { codex: VERSION },
        models: { codex: MODEL },
        install_source: { kind: "release", base_url: release.baseUrl },
      };
      deckhand = await startBatchServer({
        backend: "postgres",
        config: {
          workspaceAgent: false,
          codeHosts: [{ type: "directory", path: code }],
          batchConcurrency: 0,
          modelUpstreams: {
            codex: { kind: "openai", baseUrl: `${model.url}/v1`, apiKeyEnv: UPSTREAM_KEY_ENV },
          },
          codingAgent,
        },
        env: { [UPSTREAM_KEY_ENV]: UPSTREAM_KEY },
      });
      writeFileSync(
        join(executorDir, "config.json"),
        JSON.stringify({
          codeHosts: [{ type: "directory", path: code }],
          codingAgent,
          // The executor's steps run sandboxed too: the record directory is shared with them.
          sandbox: { writable: [records] },
        }),
      );
      const environment: NodeJS.ProcessEnv = { ...process.env };
      delete environment[UPSTREAM_KEY_ENV];
      executor = spawn(
        process.execPath,
        [
          "--conditions=source",
          join(repositoryRoot, "apps/cli/src/bin.ts"),
          "executor",
          "--database-url",
          deckhand.databaseUrl!,
          "--server-url",
          deckhand.server.url,
          "--data-dir",
          executorDir,
          "-j",
          "1",
        ],
        { cwd: repositoryRoot, env: environment, stdio: ["ignore", "pipe", "pipe"] },
      );
      for (const stream of [executor.stdout!, executor.stderr!]) {
        stream.setEncoding("utf8");
        stream.on("data", (chunk: string) => executorOutput.push(chunk));
      }
      const deadline = Date.now() + 60_000;
      while (!executorOutput.join("").includes("deckhand executor ready")) {
        if (executor.exitCode !== null || Date.now() > deadline) {
          throw new Error(`the executor did not start:\n${executorOutput.join("")}`);
        }
        await new Promise((resolveWait) => setTimeout(resolveWait, 100));
      }
    });

    afterAll(async () => {
      if (executor && executor.exitCode === null && executor.signalCode === null) {
        const exited = once(executor, "exit");
        executor.kill("SIGTERM");
        await exited;
      }
      await deckhand?.close();
      await release?.close();
      await model?.close();
      for (const directory of [code, records, executorDir]) {
        if (directory) rmSync(directory, { recursive: true, force: true });
      }
    });

    it("runs the agent through the server's proxy with a token the executor minted, revoked after", async () => {
      model.script([
        turn.text(`${fakeCodexDirective.write("GREETING.md", `hello ${REPOSITORY}\n`)}\nDone.`),
      ]);
      const recordFile = join(records, "request.json");
      const { run } = await deckhand.runToEnd(
        { source: spec(recordFile), file: "agent.yaml", options: { runtime: "local" } },
        100_000,
      );
      expect(run.error, executorOutput.join("")).toBeNull();
      expect(run.status).toBe("completed");
      expect(run.stats).toMatchObject({ workspaces: 1, completed: 1, changesets: 1 });
      const [workspace] = (
        await deckhand.api<{ workspaces: BatchWorkspace[] }>(
          "GET",
          serverPath(ServerPath.batchRunWorkspaces, { batch_run_id: run.id }),
        )
      ).body.workspaces;
      // The executor, not the server, ran it; the agent was installed in the executor's data dir.
      expect(workspace!.executor).not.toBeNull();
      expect(existsSync(join(executorDir, "agents", "codex", VERSION, "bin", "codex"))).toBe(true);
      const sent = JSON.parse(readFileSync(recordFile, "utf8")) as RecordedRequest;
      expect(sent.url).toBe(`${deckhand.server.url}${WirePath.modelProvider}/codex/responses`);
      const minted = /^Bearer (dhmp_\S+)$/.exec(sent.headers.authorization ?? "")?.[1] ?? "";
      expect(minted).toMatch(/^dhmp_/);
      // The server's proxy accepted it: the model saw the request with the upstream key.
      expect(model.requests).toHaveLength(1);
      expect(model.requests[0]!.headers.authorization).toBe(`Bearer ${UPSTREAM_KEY}`);
      // Revoked when the executor's job ended.
      const refused = await fetch(sent.url, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          [WireHeader.authorization]: `Bearer ${minted}`,
          [WireHeader.jobId]: `batch-workspace:${workspace!.id}`,
        },
        body: JSON.stringify({ model: MODEL, input: "hi", stream: true }),
      });
      await refused.text();
      expect(refused.status).toBe(401);
      expect(executorOutput.join("")).not.toContain(minted);
    }, 120_000);
  },
);

// The same step in a standalone `deckhand batch preview` (no --server): the CLI's process runs
// the batch engine alone, and its model proxy listens on loopback only once the step leases a
// token. The agent reaches the upstream through it, and the upstream's key never reaches the agent.
describe("a codingAgent step in a standalone deckhand batch preview", () => {
  let model: FakeModel;
  let release: FakeCodexRelease;
  let code: string;
  let records: string;
  let dataDir: string;

  beforeAll(async () => {
    model = await startFakeModel();
    release = await startFakeCodexRelease({ version: VERSION });
    code = generateRepositories([REPOSITORY]);
    records = mkdtempSync(join(tmpdir(), "deckhand-e2e-records-"));
    dataDir = mkdtempSync(join(tmpdir(), "deckhand-e2e-standalone-"));
    writeFileSync(
      join(dataDir, "config.json"),
      JSON.stringify({
        codeHosts: [{ type: "directory", path: code }],
        modelUpstreams: {
          codex: { kind: "openai", baseUrl: `${model.url}/v1`, apiKeyEnv: UPSTREAM_KEY_ENV },
        },
        codingAgent: {
          versions: { codex: VERSION },
          models: { codex: MODEL },
          install_sources: { codex: { kind: "release", base_url: release.baseUrl } },
        },
        sandbox: { writable: [records] },
      }),
    );
  });

  afterAll(async () => {
    await release?.close();
    await model?.close();
    for (const directory of [code, records, dataDir]) {
      if (directory) rmSync(directory, { recursive: true, force: true });
    }
  });

  it("runs the agent through a model proxy the command starts for the step", async () => {
    model.script([
      turn.text(`${fakeCodexDirective.write("GREETING.md", `hello ${REPOSITORY}\n`)}\nDone.`),
    ]);
    const recordFile = join(records, "request.json");
    const specFile = join(records, "agent.yaml");
    writeFileSync(specFile, spec(recordFile));
    const cli = spawn(
      process.execPath,
      [
        "--conditions=source",
        join(repositoryRoot, "apps/cli/src/bin.ts"),
        ...["batch", "preview", specFile, "--data-dir", dataDir, "--runtime", "local", "--json"],
      ],
      {
        cwd: repositoryRoot,
        env: { ...process.env, [UPSTREAM_KEY_ENV]: UPSTREAM_KEY, HOME: records },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    let stdout = "";
    let stderr = "";
    cli.stdout!.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    cli.stderr!.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    const [exitCode] = (await once(cli, "exit")) as [number | null];
    const lines = stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect({ exitCode, stderr, summary: lines.at(-1) }).toEqual({
      exitCode: 0,
      stderr: "",
      summary: expect.objectContaining({ steps_run: 1, changesets: 1, failed: 0 }),
    });
    const changeset = lines.find((line) => line.type === "changeset");
    expect(String(changeset?.diff)).toContain(`+hello ${REPOSITORY}`);
    // The agent talked to the loopback proxy with a job token, never with the upstream's key.
    const recorded = JSON.parse(readFileSync(recordFile, "utf8")) as RecordedRequest;
    expect(recorded.url).toMatch(
      new RegExp(`^http://127\\.0\\.0\\.1:\\d+${WirePath.modelProvider}/codex/`),
    );
    expect(stdout).not.toContain(UPSTREAM_KEY);
    expect(JSON.stringify(recorded)).not.toContain(UPSTREAM_KEY);
  }, 180_000);
});
