// The sandbox canary (issue "safe by default"): `deckhand up` as its own process, with canaries
// in its own environment, in a code host token and in an upstream key, a private key in its
// user's ~/.ssh and a file in its data directory — every one holding the word "sbxcanary". The
// native agent's command, an ACP agent's own process, its ACP terminal, a local `run:` step and a
// `codingAgent` step each count how often that word appears in every /proc/*/environ they can
// see, in ~/.ssh and in the data directory, and must count 0. Unsandboxed, each counts at least
// the server's own environment. A proxied ACP agent reaches the model proxy and no other
// loopback service.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type FakeCodexRelease,
  type FakeModel,
  fakeCodexDirective,
  SessionStreamClient,
  scriptedAcpAgentCommand,
  startFakeCodexRelease,
  startFakeModel,
  turn,
} from "@deckhand/testkit";
import {
  type BatchStepDetail,
  type BatchWorkspace,
  type Chat,
  type Project,
  type ProvidersSnapshot,
  ServerPath,
  type Session,
  serverPath,
} from "@deckhand/wire";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type BatchServer,
  databaseBackends,
  generateRepositories,
  startBatchServer,
} from "./batch-server.ts";
import { runTurnAndWait } from "./deckhand-up.ts";

const REPOSITORY = "github.com/acme/sandboxed";
const CODEX_VERSION = "0.0.1-fake";
const UPSTREAM_KEY_ENV = "E2E_SANDBOX_UPSTREAM_KEY";
const CODE_HOST_TOKEN_ENV = "E2E_SANDBOX_GITHUB_TOKEN";
const canaries = {
  [UPSTREAM_KEY_ENV]: "sk-sbxcanary-upstream-key-5d1e",
  [CODE_HOST_TOKEN_ENV]: "ghp_sbxcanary_code_host_token_8a2f",
  // Withheld from agents by config.json's deny list: only reading the server's environ finds it.
  E2E_SANDBOX_SERVER_ONLY: "sbxcanary-server-environment-3c9b",
};

/** Prints `sbx-count=N`: how often the canary word is found where a sandboxed process looks. */
function probe(dataDir: string): string {
  return `echo "sbx-count=$({ cat /proc/[0-9]*/environ; cat "$HOME/.ssh/id_ed25519"; cat ${dataDir}/canary.txt; } 2>/dev/null | tr '\\000' '\\n' | grep -c sbxcanary)"`;
}

const COUNT = /sbx-count=(\d+)/;

function count(text: string): number {
  const match = COUNT.exec(text);
  if (match === null) throw new Error(`no sbx-count in: ${text.slice(0, 2000)}`);
  return Number(match[1]);
}

describe.each(databaseBackends)(
  "agents and steps reach nothing of the server's (sandbox) on %s",
  (backend) => {
    let model: FakeModel;
    let release: FakeCodexRelease;
    let home: string;
    let code: string;
    let deckhand: BatchServer;
    let chat: Chat;
    let stream: SessionStreamClient;

    beforeAll(async () => {
      model = await startFakeModel();
      release = await startFakeCodexRelease({ version: CODEX_VERSION });
      home = mkdtempSync(join(tmpdir(), "deckhand-e2e-sandbox-home-"));
      mkdirSync(join(home, ".ssh"));
      writeFileSync(join(home, ".ssh", "id_ed25519"), "-----sbxcanary private key-----\n");
      code = generateRepositories([REPOSITORY]);
      deckhand = await startBatchServer({
        backend,
        config: {
          codeHosts: [{ type: "directory", path: code }],
          codeHostConnections: [
            { type: "github", url: "https://github.example", tokenEnv: CODE_HOST_TOKEN_ENV },
          ],
          agentEnvironment: { deny: ["E2E_SANDBOX_*"] },
          modelUpstreams: {
            deckhand: { kind: "openai", baseUrl: `${model.url}/v1`, apiKeyEnv: UPSTREAM_KEY_ENV },
            codex: { kind: "openai", baseUrl: `${model.url}/v1`, apiKeyEnv: UPSTREAM_KEY_ENV },
            "claude-code": { kind: "anthropic", baseUrl: model.url, apiKeyEnv: UPSTREAM_KEY_ENV },
          },
          codingAgent: {
            versions: { codex: CODEX_VERSION },
            models: { codex: "gpt-5.5" },
            install_sources: { codex: { kind: "release", base_url: release.baseUrl } },
          },
          batchConcurrency: 1,
        },
        env: { ...canaries, HOME: home },
      });
      writeFileSync(join(deckhand.dataDir, "canary.txt"), "sbxcanary in the data directory\n");
      // A custom agent that keeps its own login, and Claude's slot taken by the scripted agent:
      // pointed at the model proxy through Claude's environment, as claude-agent-acp is.
      writeFileSync(
        join(deckhand.dataDir, "providers.json"),
        JSON.stringify({
          providers: {
            scripted: { extends: "acp", command: scriptedAcpAgentCommand() },
            claude: { command: scriptedAcpAgentCommand() },
          },
        }),
      );
      await deckhand.api("POST", ServerPath.providersRefresh, { force: true });

      const project = await deckhand.api<Project>("POST", ServerPath.projects, {
        repository_path: join(code, REPOSITORY),
      });
      expect(project.status).toBe(201);
      const session = await deckhand.api<Session>(
        "POST",
        serverPath(ServerPath.projectSessions, { project_id: project.body.id }),
        { title: "sandbox", approval_policy: "never" },
      );
      expect(session.status).toBe(201);
      chat = (
        await deckhand.api<Chat>(
          "POST",
          serverPath(ServerPath.sessionChats, { session_id: session.body.id }),
          {},
        )
      ).body;
      stream = new SessionStreamClient(
        deckhand.server.url,
        serverPath(ServerPath.sessionStream, { session_id: session.body.id }),
      );
      await stream.opened;
    }, 120_000);

    afterAll(async () => {
      await stream?.close();
      await deckhand?.close();
      await release?.close();
      await model?.close();
      for (const directory of [home, code]) {
        if (directory) rmSync(directory, { recursive: true, force: true });
      }
    });

    async function runTurn(agent: string, text: string): Promise<string> {
      return JSON.stringify(await runTurnAndWait(deckhand.api, stream, chat.id, agent, text));
    }

    it("says in the providers snapshot that agents are sandboxed with bubblewrap", async () => {
      const snapshot = await deckhand.api<ProvidersSnapshot>("GET", ServerPath.providersSnapshot);
      expect(snapshot.body.sandbox).toEqual({ kind: "bubblewrap", reason: null });
    });

    it("the native agent's command counts no canary", async () => {
      model.script([
        turn.functionCall("execute", { command: probe(deckhand.dataDir) }),
        turn.text("done"),
      ]);
      expect(count(await runTurn("deckhand", "look around"))).toBe(0);
    });

    it("an ACP terminal counts no canary", async () => {
      expect(count(await runTurn("scripted", `run ${probe(deckhand.dataDir)}`))).toBe(0);
    });

    it("an ACP agent's own process counts no canary", async () => {
      expect(count(await runTurn("scripted", `exec ${probe(deckhand.dataDir)}`))).toBe(0);
    });

    it("a proxied ACP agent reaches the model proxy and no other loopback service", async () => {
      const modelPort = new URL(model.url).port;
      const script = `
      const attempt = (url, init) => fetch(url, init).then((r) => String(r.status), (e) => e.cause?.code ?? e.message);
      (async () => {
        const proxy = await attempt(process.env.ANTHROPIC_BASE_URL + "/v1/messages", { method: "POST", headers: { "content-type": "application/json", authorization: "Bearer " + process.env.ANTHROPIC_AUTH_TOKEN }, body: "{}" });
        const api = await attempt(new URL("/api/projects", process.env.ANTHROPIC_BASE_URL).href);
        const other = await attempt("http://127.0.0.1:${modelPort}/v1/models");
        console.log("reach proxy=" + proxy + " api=" + api + " other=" + other);
      })();`;
      const streamed = await runTurn("claude", `exec node -e '${script.replace(/\n\s*/g, " ")}'`);
      const reached = /reach proxy=(\S+) api=(\S+) other=([A-Z_]+|\d+)/.exec(streamed);
      expect(reached, streamed.slice(0, 2000)).not.toBeNull();
      // The proxy answered (whatever it made of the empty request); the API and the model's own
      // port, both on this machine's loopback, are out of reach.
      expect(Number(reached![1])).toBeGreaterThan(0);
      expect(reached![2]).toBe("404");
      expect(reached![3]).toBe("ECONNREFUSED");
    });

    it("a local run step and a codingAgent step count no canary", async () => {
      model.script([turn.text(`${fakeCodexDirective.exec(probe(deckhand.dataDir))}\nDone.`)]);
      const spec = `
version: 3
name: sandboxed
on:
  - repository: ${REPOSITORY}
steps:
  - run: ${JSON.stringify(probe(deckhand.dataDir))}
    image: localhost/deckhand-test/busybox:latest
  - codingAgent:
      type: codex
      prompt: Look around
    image: localhost/deckhand-test/busybox:latest
changesetTemplate:
  title: Sandboxed
  body: Nothing
  branch: sandboxed
  commit:
    message: Sandboxed
`;
      const { run } = await deckhand.runToEnd(
        { source: spec, file: "sandboxed.yaml", options: { runtime: "local" } },
        120_000,
      );
      const [workspace] = (
        await deckhand.api<{ workspaces: BatchWorkspace[] }>(
          "GET",
          serverPath(ServerPath.batchRunWorkspaces, { batch_run_id: run.id }),
        )
      ).body.workspaces;
      expect(workspace?.error ?? null).toBeNull();
      for (const stepIndex of [0, 1]) {
        const detail = await deckhand.api<BatchStepDetail>(
          "GET",
          serverPath(ServerPath.batchWorkspaceStep, {
            workspace_id: workspace!.id,
            step_index: String(stepIndex),
          }),
        );
        expect(detail.body.step.sandbox).toBe("bubblewrap");
        expect(count(`${detail.body.stdout}\n${detail.body.stderr}`)).toBe(0);
      }
    });
  },
);
