// Real ACP agents as `acp` batch steps, through the model proxy to the fake model, over several
// repositories: Zed's codex-acp and claude-agent-acp, which are not dependencies of the
// repository. Opt in by installing them anywhere and naming their binaries:
//   npm install --prefix /tmp/acp-agents @zed-industries/codex-acp @agentclientprotocol/claude-agent-acp
//   CODEX_ACP_BIN=/tmp/acp-agents/node_modules/@zed-industries/codex-acp-linux-x64/bin/codex-acp
//   CLAUDE_AGENT_ACP_BIN=/tmp/acp-agents/node_modules/.bin/claude-agent-acp
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { delimiter, dirname, join } from "node:path";
import {
  createModelProxy,
  InMemoryModelTokenStore,
  InMemoryUsageRecorder,
  leaseModelProvider,
} from "@deckhand/model-proxy";
import { createProviderService, type ProviderService } from "@deckhand/providers";
import {
  type CapturedRequest,
  type FakeModel,
  type FakeTurn,
  renderTurn,
  startFakeModel,
  turn,
} from "@deckhand/testkit";
import { WireHeader } from "@deckhand/wire";
import { type ServerType, serve } from "@hono/node-server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { repositoryAt, specFrom, temporaryDirectory, testEnvironment } from "../test/support.ts";
import { parseAgentTranscript } from "./agent-transcript.ts";
import { buildChangesets, type WorkspaceOutcome } from "./build-changesets.ts";
import { checkoutWorkspace } from "./checkout-workspace.ts";
import type { ModelProviderAccess } from "./coding-agent-step.ts";
import { loadRepositories } from "./repositories.ts";
import { resolveWorkspaces } from "./resolve-workspaces.ts";
import { runWorkspace } from "./run-workspace.ts";
import { MemoryStepCache } from "./step-cache.ts";

const UPSTREAM_KEY = "sk-fake-upstream-key-acp-steps-77";
const REPOSITORIES = ["api", "web"];

interface RealAgent {
  provider: "codex" | "claude";
  agentType: "codex" | "claude-code";
  binary: string | undefined;
  /** The step's own environment: where the agent keeps its state, inside the test's directory. */
  env(home: string): Record<string, string>;
  /**
   * What the fake model answers a request with: write hello.txt in the workspace, and once the
   * tool's result is back, say so. Requests besides the turn's (a title) get a short text.
   */
  answer(request: CapturedRequest, workspaceDirectory: string): FakeTurn;
}

/** Whether the conversation already holds a tool's result. */
const toolAnswered = (request: CapturedRequest) =>
  /"(function_call_output|custom_tool_call_output|tool_result)"/.test(request.body);

const PATCH = "*** Begin Patch\n*** Add File: hello.txt\n+hello from the agent\n*** End Patch\n";

const agents: RealAgent[] = [
  {
    provider: "codex",
    agentType: "codex",
    binary: process.env.CODEX_ACP_BIN,
    env: (home) => {
      // A model in codex's bundled catalog, so it offers apply_patch; no analytics.
      mkdirSync(home, { recursive: true });
      writeFileSync(
        join(home, "config.toml"),
        'model = "gpt-5.3-codex"\nsandbox_mode = "workspace-write"\n[analytics]\nenabled = false\n',
      );
      return { CODEX_HOME: home };
    },
    answer: (request) =>
      toolAnswered(request) ? turn.text("patched") : turn.customToolCall("apply_patch", PATCH),
  },
  {
    provider: "claude",
    agentType: "claude-code",
    binary: process.env.CLAUDE_AGENT_ACP_BIN,
    env: (home) => {
      mkdirSync(home, { recursive: true });
      return { CLAUDE_CONFIG_DIR: home, HOME: home };
    },
    answer: (request, workspaceDirectory) => {
      // Claude Code asks for a session title first, without tools.
      const tools = (request.json as { tools?: unknown[] } | undefined)?.tools ?? [];
      if (tools.length === 0) return turn.text("Add hello.txt");
      if (toolAnswered(request)) return turn.text("patched");
      return turn.functionCall("Write", {
        file_path: join(workspaceDirectory, "hello.txt"),
        content: "hello from the agent\n",
      });
    },
  },
];

for (const agent of agents) {
  describe.skipIf(agent.binary === undefined || !existsSync(agent.binary))(
    `${agent.provider} as an acp batch step`,
    () => {
      let scratch: ReturnType<typeof temporaryDirectory>;
      let fake: FakeModel;
      let server: ServerType;
      let providers: ProviderService;
      const tokens = new InMemoryModelTokenStore();
      const usage = new InMemoryUsageRecorder();
      let modelProvider: ModelProviderAccess;

      beforeAll(async () => {
        scratch = temporaryDirectory("deckhand-acp-real-");
        fake = await startFakeModel();
        const proxy = createModelProxy({
          upstreams: {
            codex: { kind: "openai", baseUrl: `${fake.url}/v1`, apiKey: UPSTREAM_KEY },
            "claude-code": { kind: "anthropic", baseUrl: fake.url, apiKey: UPSTREAM_KEY },
          },
          tokens,
          usage,
          rateLimit: false,
        });
        server = await new Promise<ServerType>((resolveServer) => {
          const instance = serve({ fetch: proxy.fetch, hostname: "127.0.0.1", port: 0 }, () =>
            resolveServer(instance),
          );
        });
        const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
        modelProvider = {
          lease: (jobId) =>
            leaseModelProvider(
              { modelTokens: tokens, serverUrl: () => origin },
              { jobId, ttlMs: 10 * 60_000 },
            ),
        };
        providers = createProviderService({
          configPath: join(scratch.path, "providers.json"),
          modelUpstreamConfigured: true,
          env: {
            ...process.env,
            PATH: `${dirname(agent.binary!)}${delimiter}${process.env.PATH ?? ""}`,
          },
        });
      });

      afterAll(async () => {
        await providers?.close();
        await new Promise<void>((resolveClose) => {
          if (server === undefined) return resolveClose();
          server.close(() => resolveClose());
          if ("closeAllConnections" in server) server.closeAllConnections();
        });
        await fake?.close();
        scratch?.remove();
      });

      it("changes each repository through the proxy with the job's token, one changeset each", async () => {
        const root = join(scratch.path, "code");
        for (const name of REPOSITORIES) {
          repositoryAt(join(root, `github.com/acme/${name}`), { "README.md": `# ${name}\n` });
        }
        const home = join(scratch.path, `${agent.provider}-home`);
        const env = Object.entries(agent.env(home))
          .map(([name, value]) => `        ${name}: ${value}`)
          .join("\n");
        const spec = specFrom(`
version: 3
name: hello
on:
  - repositoriesMatchingQuery: repo:acme
steps:
  - codingAgent:
      type: acp
      provider: ${agent.provider}
      prompt: Add hello.txt saying hello from the agent.
    env:
${env}
changesetTemplate:
  title: Hello \${{ repository.name }}
  branch: hello
  commit:
    message: add hello.txt
`);
        const repositories = await loadRepositories({
          codeHosts: [{ type: "directory", path: root }],
        });
        const { workspaces } = await resolveWorkspaces(spec, { repositories });
        expect(workspaces).toHaveLength(REPOSITORIES.length);
        const outcomes: WorkspaceOutcome[] = [];
        for (const [index, workspace] of workspaces.entries()) {
          fake.reset();
          const checkoutDirectory = join(scratch.path, `checkout-${index}`);
          let sequence = 0;
          fake.respondWith((request) =>
            renderTurn(request.api!, agent.answer(request, checkoutDirectory), {
              model: "fake-model",
              sequence: ++sequence,
            }),
          );
          const jobId = `batch-workspace:real-${agent.provider}-${index}`;
          const run = await runWorkspace({
            workspace,
            spec,
            checkout: await checkoutWorkspace(workspace, checkoutDirectory),
            cache: new MemoryStepCache(),
            runtime: "local",
            environment: testEnvironment(scratch.path, {
              outerEnvironment: { PATH: process.env.PATH },
              modelProvider,
              acpAgents: {
                providers,
                proxied: (agentType) => agentType === agent.agentType,
                defaultPermissions: "allow-edits",
              },
            }),
            jobId,
          });
          expect(run.error).toBeNull();
          expect(run.status).toBe("completed");
          const transcript = parseAgentTranscript("acp", run.steps[0]!.stdout);
          expect(transcript.entries.some((entry) => entry.kind === "tool_call")).toBe(true);
          // Upstream saw the real key, never the scoped token; the proxy counted the job.
          for (const request of fake.requests) {
            const sent = JSON.stringify(request.headers);
            expect(sent).toContain(UPSTREAM_KEY);
            expect(request.headers[WireHeader.jobId.toLowerCase()]).toBeUndefined();
          }
          expect((await usage.waitFor(1)).map((entry) => entry.jobId)).toContain(jobId);
          outcomes.push({ workspace, result: run.result });
        }
        const changesets = buildChangesets(spec, outcomes);
        expect(changesets.map((changeset) => changeset.title).sort()).toEqual(
          REPOSITORIES.map((name) => `Hello github.com/acme/${name}`),
        );
        for (const changeset of changesets) {
          expect(changeset.diff).toContain("+hello from the agent");
        }
      }, 240_000);
    },
  );
}
