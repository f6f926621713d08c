// `codingAgent` steps of type `acp`: the testkit's scripted ACP agent, configured as Deckhand
// providers, run headless in batch workspaces of several generated repositories, with the
// batch-run service, its queue and its step cache on PGlite.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createDb, type DbHandle, TaskRegistry, TaskWorker } from "@deckhand/db";
import { createProviderService, type ProviderService } from "@deckhand/providers";
import { scriptedAcpAgentCommand } from "@deckhand/testkit";
import { type BatchRun, MODEL_TOKEN_PREFIX, WireEnv } from "@deckhand/wire";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { repositoryAt, temporaryDirectory, testEnvironment } from "../test/support.ts";
import { type AcpAgentStepOptions, permissionAnswer } from "./acp-agent-step.ts";
import { BatchRunService } from "./batch-run-service.ts";
import { BatchesError } from "./batches-error.ts";
import type { ModelProviderAccess } from "./coding-agent-step.ts";

let scratch: ReturnType<typeof temporaryDirectory>;
let root: string;
let database: DbHandle;
let providers: ProviderService;
let worker: TaskWorker | null;
/** Every token the fake model-provider access lent, and whether it was revoked. */
let leases: { jobId: string; token: string; released: boolean }[];

const modelProvider: ModelProviderAccess = {
  async lease(jobId) {
    const lease = {
      jobId,
      token: `${MODEL_TOKEN_PREFIX}${"b".repeat(43)}`,
      released: false,
    };
    leases.push(lease);
    return {
      baseUrl: "http://127.0.0.1:9/model-provider",
      token: lease.token,
      release: async () => {
        lease.released = true;
      },
    };
  },
};

beforeEach(async () => {
  scratch = temporaryDirectory("deckhand-acp-step-");
  root = join(scratch.path, "code");
  for (const name of ["api", "web", "docs"]) {
    repositoryAt(join(root, `github.com/acme/${name}`), { "README.md": `# ${name}\n` });
  }
  const configPath = join(scratch.path, "providers.json");
  writeFileSync(
    configPath,
    JSON.stringify({
      providers: {
        scripted: { extends: "acp", command: scriptedAcpAgentCommand("normal") },
        // The built-in codex, its command the scripted agent that opens a session only when
        // Deckhand pointed it at the proxy as it points codex-acp.
        codex: { command: scriptedAcpAgentCommand("proxy-required") },
      },
    }),
  );
  providers = createProviderService({ configPath, modelUpstreamConfigured: false });
  database = await createDb({ dataDir: "memory://" });
  worker = null;
  leases = [];
});

afterEach(async () => {
  await worker?.stop();
  await providers.close();
  await database.close();
  scratch.remove();
});

function serviceWith(acpAgents: AcpAgentStepOptions | undefined): BatchRunService {
  const service = new BatchRunService({
    database,
    codeHosts: () => [{ type: "directory", path: root }],
    environment: testEnvironment(scratch.path, {
      containerRuntime: null,
      outerEnvironment: { PATH: process.env.PATH },
      modelProvider,
      ...(acpAgents ? { acpAgents } : {}),
    }),
  });
  const registry = new TaskRegistry();
  service.register(registry);
  worker = new TaskWorker({ database, registry, concurrency: 2, pollIntervalMs: 50 });
  void worker.start();
  return service;
}

/** The providers as the server gives them: the codex agent type has a model upstream. */
const acpAgents = (): AcpAgentStepOptions => ({
  providers,
  proxied: (agentType) => agentType === "codex",
});

async function finished(service: BatchRunService, runId: string): Promise<BatchRun> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    const run = await service.getRun(runId);
    if (run.status !== "queued" && run.status !== "running") return run;
    if (Date.now() > deadline) throw new Error(`run ${runId} still ${run.status}`);
    await new Promise((resolveWait) => setTimeout(resolveWait, 100));
  }
}

const spec = (agent: string) => `
version: 3
name: notes
on:
  - repositoriesMatchingQuery: repo:acme
steps:
  - codingAgent:
${agent
  .trim()
  .split("\n")
  .map((line) => `      ${line}`)
  .join("\n")}
changesetTemplate:
  title: Notes for \${{ repository.name }}
  branch: notes
  commit:
    message: add notes
`;

describe("acp codingAgent steps", () => {
  it("run the scripted agent in each of several repositories, with its edits as changesets, its transcript stored, and a second run from the cache", async () => {
    const service = serviceWith(acpAgents());
    const source = spec(`
type: acp
provider: scripted
prompt: edit NOTES.md notes for \${{ repository.name }}
`);
    const run = await finished(service, (await service.createRun({ source })).id);
    expect(run.status).toBe("completed");
    expect(run.stats).toMatchObject({ completed: 3, failed: 0, changesets: 3, steps_run: 3 });
    const changesets = await service.listChangesets(run.id);
    expect(changesets.map((changeset) => changeset.title).sort()).toEqual([
      "Notes for github.com/acme/api",
      "Notes for github.com/acme/docs",
      "Notes for github.com/acme/web",
    ]);
    for (const changeset of changesets) {
      expect(changeset.diff).toContain("+++ b/NOTES.md");
      expect(changeset.diff).toContain(`+notes for ${changeset.repository}`);
    }

    // What the agent did, read back as the CLI agents' transcripts are.
    const [workspace] = await service.listWorkspaces(run.id);
    const step = await service.getStep(workspace!.id, 0);
    expect(step.step).toMatchObject({ outcome: "run", runtime: "local", exit_code: 0 });
    expect(step.command).toContain("scripted over ACP, permissions allow-edits");
    expect(step.agent).toMatchObject({
      type: "acp",
      entries: [
        { kind: "tool_call", text: "Edit NOTES.md" },
        { kind: "tool_result", text: "permission allow_once: Edit NOTES.md" },
        { kind: "tool_result", text: "Edit NOTES.md: completed" },
        { kind: "message", text: "edited NOTES.md" },
      ],
    });

    // The same spec again: every step comes from the shared step cache; no agent starts.
    const again = await finished(service, (await service.createRun({ source })).id);
    expect(again.stats).toMatchObject({ completed: 3, changesets: 3, steps_run: 0 });
    // The scripted agent needs no model: no token was ever minted.
    expect(leases).toEqual([]);
  }, 180_000);

  it("answer the agent's permission requests by the step's policy, never asking a person", async () => {
    const service = serviceWith(acpAgents());
    const denied = await finished(
      service,
      (
        await service.createRun({
          source: spec(`
type: acp
provider: scripted
permissions: deny
prompt: edit NOTES.md refused
`),
        })
      ).id,
    );
    // The agent was refused, said so and ended its turn: the step ran and changed nothing.
    expect(denied).toMatchObject({ status: "completed", stats: { steps_run: 3, changesets: 0 } });
    const [workspace] = await service.listWorkspaces(denied.id);
    expect((await service.getStep(workspace!.id, 0)).agent?.entries).toContainEqual({
      kind: "message",
      text: "rejected",
      detail: null,
    });

    // A step naming no policy takes the run's (or config.json's), here deny as well.
    const byRun = await finished(
      service,
      (
        await service.createRun({
          source: spec(`
type: acp
provider: scripted
prompt: edit NOTES.md refused by the run
`),
          options: {
            coding_agent: { acp_permissions: "deny" },
            exclude_repositories: ["github.com/acme/web", "github.com/acme/docs"],
          },
        })
      ).id,
    );
    expect(byRun).toMatchObject({ status: "completed", stats: { steps_run: 1, changesets: 0 } });

    expect(permissionAnswer("allow-edits", "edit")).toBe("allow_once");
    expect(permissionAnswer("allow-edits", "read")).toBe("allow_once");
    expect(permissionAnswer("allow-edits", "execute")).toBe("reject_once");
    expect(permissionAnswer("allow-edits", "fetch")).toBe("reject_once");
    expect(permissionAnswer("allow-edits", undefined)).toBe("reject_once");
    expect(permissionAnswer("allow-all", "execute")).toBe("allow_once");
    expect(permissionAnswer("deny", "read")).toBe("reject_once");
  }, 180_000);

  it("keep the agent's files and terminals inside the workspace", async () => {
    const service = serviceWith(acpAgents());
    const outside = join(scratch.path, "outside.txt");
    const run = await finished(
      service,
      (
        await service.createRun({
          source: spec(`
type: acp
provider: scripted
prompt: write ${outside} escaped
`),
          options: { exclude_repositories: ["github.com/acme/web", "github.com/acme/docs"] },
        })
      ).id,
    );
    expect(run.stats).toMatchObject({ completed: 1, changesets: 0 });
    expect(existsSync(outside)).toBe(false);
    const [workspace] = await service.listWorkspaces(run.id);
    const step = await service.getStep(workspace!.id, 0);
    expect(step.agent?.entries.at(-1)?.text).toMatch(/^error: .*outside/);
  }, 120_000);

  it("reach models through the proxy with the job's token, revoked when the workspace ends and never shown", async () => {
    const service = serviceWith(acpAgents());
    const run = await finished(
      service,
      (
        await service.createRun({
          source: spec(`
type: acp
provider: codex
prompt: env
`),
          options: { exclude_repositories: ["github.com/acme/web", "github.com/acme/docs"] },
        })
      ).id,
    );
    // proxy-required opens no session without the proxy's override, token and job id.
    expect(run.status).toBe("completed");
    const [workspace] = await service.listWorkspaces(run.id);
    expect(leases).toEqual([
      { jobId: `batch-workspace:${workspace!.id}`, token: leases[0]!.token, released: true },
    ]);
    const step = await service.getStep(workspace!.id, 0);
    const said = step.agent!.entries.map((entry) => entry.text).join("\n");
    expect(said).toContain(`${WireEnv.jobId}=batch-workspace:${workspace!.id}`);
    // The agent printed its environment: the token in it is redacted everywhere it is kept.
    expect(said).toContain(`${WireEnv.modelProviderToken}=`);
    expect(JSON.stringify(step)).not.toContain(leases[0]!.token);
  }, 120_000);

  it("refuse a spec naming a provider Deckhand does not have when it is previewed, where it is written", async () => {
    const service = serviceWith(acpAgents());
    const source = spec(`
type: acp
provider: scriptd
prompt: hello
`);
    const refused = await service.createRun({ source }).then(
      () => null,
      (error: unknown) => error,
    );
    expect(BatchesError.isInstance(refused)).toBe(true);
    expect(refused).toMatchObject({ code: "invalid_spec" });
    expect((refused as Error).message).toContain(
      'spec.yaml:9:17: steps[0].codingAgent.provider: unknown provider "scriptd"; did you mean "scripted"? ACP providers: codex, claude, gemini, opencode, goose, qwen, scripted',
    );
    await expect(service.resolve({ source })).rejects.toMatchObject({ code: "invalid_spec" });
    const native = spec(`
type: acp
provider: deckhand
prompt: hello
`);
    await expect(service.resolve({ source: native })).rejects.toMatchObject({
      message: expect.stringContaining("deckhand is Deckhand's native agent, not an ACP agent"),
    });
  });

  it("fail a step whose agent crashes, with what it said on stderr", async () => {
    const service = serviceWith(acpAgents());
    const run = await finished(
      service,
      (
        await service.createRun({
          source: spec(`
type: acp
provider: scripted
prompt: crash
`),
          options: { exclude_repositories: ["github.com/acme/web", "github.com/acme/docs"] },
        })
      ).id,
    );
    expect(run.status).toBe("failed");
    const [workspace] = await service.listWorkspaces(run.id);
    expect(workspace).toMatchObject({ state: "failed" });
    expect(workspace!.error).toContain(
      "step 0 failed with exit code 1: scripted exited with code 7",
    );
  }, 120_000);
});

describe("acp steps without providers", () => {
  it("are refused at preview when the service has no providers to run", async () => {
    const service = serviceWith(undefined);
    const refused = await service
      .resolve({ source: spec("type: acp\nprovider: scripted\nprompt: hi") })
      .then(
        () => null,
        (error: unknown) => error,
      );
    expect((refused as Error).message).toContain(
      "acp steps run Deckhand's providers, and this service was given none",
    );
    expect(readFileSync(join(scratch.path, "providers.json"), "utf8")).toContain("scripted");
  });
});
