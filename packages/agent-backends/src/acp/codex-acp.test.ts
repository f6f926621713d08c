import { randomUUID } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { delimiter, dirname, join } from "node:path";
import {
  createModelProxy,
  InMemoryModelTokenStore,
  InMemoryUsageRecorder,
  mintModelToken,
} from "@deckhand/model-proxy";
import { createProviderService } from "@deckhand/providers";
import { type FakeModel, startFakeModel, turn } from "@deckhand/testkit";
import { type AgentEvent, AgentEventSchema, WireEnv, WireHeader, WirePath } from "@deckhand/wire";
import { type ServerType, serve } from "@hono/node-server";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startTestWorkspace, type TestWorkspace } from "../../test/test-workspace.ts";
import type { AgentBackend, AgentSessionContext, PromptResult } from "../backend.ts";
import { createAcpBackend } from "./acp-backend.ts";
import type { AcpLaunch } from "./agent-process.ts";

// A real ACP agent against the fake model: Zed's codex-acp, which is not a dependency of the
// repository (a 230 MB binary). Opt in by installing it anywhere and naming its binary:
//   npm install --prefix /tmp/codex-acp @zed-industries/codex-acp
//   CODEX_ACP_BIN=/tmp/codex-acp/node_modules/@zed-industries/codex-acp-linux-x64/bin/codex-acp
const binary = process.env.CODEX_ACP_BIN;

const TOKEN = "codex-acp-test-token-5e1a";
/** A model in codex's bundled catalog, so it offers its tools. */
const MODEL = "gpt-5.3-codex";
/** The real key the proxy holds for its upstream (the fake model); codex never sees it. */
const UPSTREAM_KEY = "sk-fake-upstream-key-7b3c";
const PATCH = "*** Begin Patch\n*** Add File: hello.txt\n+hello from codex\n*** End Patch\n";

/** What keeps codex offline and in the worktree, whichever provider points it at the model. */
const OFFLINE_ARGS = [
  "-c",
  `model=${MODEL}`,
  "-c",
  "analytics.enabled=false",
  "-c",
  'sandbox_mode="workspace-write"',
];

describe.skipIf(binary === undefined || !existsSync(binary))(
  "codex-acp against the fake model",
  () => {
    let workspace: TestWorkspace;
    let fake: FakeModel;
    const backends: AgentBackend[] = [];

    beforeAll(async () => {
      workspace = await startTestWorkspace("deckhand-codex-acp-", { token: TOKEN });
      fake = await startFakeModel();
    });

    beforeEach(() => {
      fake.reset();
      rmSync(join(workspace.worktree, "hello.txt"), { force: true });
    });

    afterAll(async () => {
      await Promise.all(backends.map((backend) => backend.dispose()));
      await fake?.close();
      await workspace?.close();
    });

    function codexBackend(
      launch: AcpLaunch,
      modelProxy: AgentSessionContext["modelProxy"],
    ): AgentBackend {
      const codexHome = join(workspace.root, `codex-home-${backends.length}`);
      mkdirSync(codexHome);
      const backend = createAcpBackend({
        context: {
          sessionId: randomUUID(),
          chatId: randomUUID(),
          worktreePath: workspace.worktree,
          workspaceAgent: { url: workspace.agent.url, token: TOKEN },
          modelProxy,
          resumeSessionId: null,
        },
        launch: { ...launch, env: { ...launch.env, CODEX_HOME: codexHome } },
        agent: "codex",
        timeouts: { initializeMs: 20_000, cancelMs: 3_000, stopGraceMs: 1_000 },
      });
      backends.push(backend);
      return backend;
    }

    /** Asks for hello.txt; the fake model answers with a free-form apply_patch, then text. */
    async function patchTurn(
      backend: AgentBackend,
    ): Promise<PromptResult & { events: AgentEvent[] }> {
      const session = await backend.ensureSession();
      expect(session.resumed).toBe(false);
      fake.script([turn.customToolCall("apply_patch", PATCH), turn.text("patched")]);
      const events: AgentEvent[] = [];
      const result = await backend.prompt({
        messageId: randomUUID(),
        text: "add hello.txt",
        onEvent: async (event) => {
          events.push(AgentEventSchema.parse(event));
          if (event.type === "permission_request") {
            await backend.respondToPermission({
              requestId: event.request_id,
              outcome: "allow_once",
            });
          }
        },
      });
      return { ...result, events };
    }

    /** The turn's own events: codex-acp may send its commands (or a mode) at any moment. */
    function turnEventTypes(events: AgentEvent[]): string[] {
      return events.flatMap((event) =>
        event.type === "commands" || event.type === "mode" ? [] : [event.type],
      );
    }

    function expectPatched(result: PromptResult & { events: AgentEvent[] }): void {
      expect(fake.requests).toHaveLength(2);
      expect(result).toMatchObject({ stopReason: "end_turn" });
      expect(result.text).toContain("patched");
      // codex-acp applies patches itself (not through fs/write_text_file), after asking.
      expect(turnEventTypes(result.events)).toEqual([
        "tool_call",
        "permission_request",
        "permission_resolved",
        "tool_update",
        "text",
        "turn_end",
      ]);
      expect(result.events.find((event) => event.type === "tool_call")).toMatchObject({
        kind: "edit",
        locations: ["hello.txt"],
      });
      expect(readFileSync(join(workspace.worktree, "hello.txt"), "utf8")).toBe(
        "hello from codex\n",
      );
    }

    it("answers a prompt with the fake model's text and applies a patch (a custom provider)", async () => {
      const backend = codexBackend(
        {
          executable: binary!,
          args: [
            "-c",
            "model_provider=fake",
            "-c",
            `model_providers.fake={ name = "fake", base_url = "${fake.url}/v1", env_key = "FAKE_MODEL_KEY", wire_api = "responses" }`,
            ...OFFLINE_ARGS,
          ],
          env: { FAKE_MODEL_KEY: "fake-model-key-1234" },
          unset: ["OPENAI_API_KEY"],
        },
        null,
      );
      expectPatched(await patchTurn(backend));
    });

    it("runs as the built-in codex provider through the model proxy with a scoped token", async () => {
      // The proxy as the server runs it: the codex agent type forwards to the fake model.
      const tokens = new InMemoryModelTokenStore();
      const usage = new InMemoryUsageRecorder();
      const proxy = createModelProxy({
        upstreams: { codex: { kind: "openai", baseUrl: `${fake.url}/v1`, apiKey: UPSTREAM_KEY } },
        tokens,
        usage,
        rateLimit: false,
      });
      const server = await new Promise<ServerType>((resolveServer) => {
        const instance = serve({ fetch: proxy.fetch, hostname: "127.0.0.1", port: 0 }, () =>
          resolveServer(instance),
        );
      });
      try {
        const proxyUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}${WirePath.modelProvider}/codex`;
        const jobId = `agent-session:${randomUUID()}`;
        const minted = await mintModelToken(tokens, { jobId, ttlMs: 10 * 60_000 });

        // The built-in provider, resolved as the server resolves it: codex-acp found on PATH,
        // its proxy arguments and environment from the registry.
        const providers = createProviderService({
          configPath: join(workspace.root, "providers.json"),
          modelUpstreamConfigured: true,
          env: { ...process.env, PATH: `${dirname(binary!)}${delimiter}${process.env.PATH ?? ""}` },
        });
        const resolved = await providers
          .resolve("codex", { proxy: { proxyUrl, token: minted.token, jobId } })
          .finally(() => providers.close());
        expect(resolved).toMatchObject({ executable: binary, agentType: "codex" });
        expect(resolved.args.join(" ")).toContain(proxyUrl);
        // The token travels in the environment only.
        expect(resolved.args.join(" ")).not.toContain(minted.token);
        expect(resolved.env[WireEnv.modelProviderToken]).toBe(minted.token);

        const backend = codexBackend(
          {
            executable: resolved.executable!,
            args: [...resolved.args, ...OFFLINE_ARGS],
            env: resolved.env,
            unset: resolved.unset,
          },
          { url: proxyUrl, token: minted.token, jobId },
        );
        const result = await patchTurn(backend);
        expectPatched(result);
        expect(JSON.stringify(result.events)).not.toContain(minted.token);

        // Upstream saw the real key, not the scoped token; the proxy counted both requests
        // against the token's job.
        for (const request of fake.requests) {
          expect(request.path).toBe("/v1/responses");
          expect(request.headers[WireHeader.authorization.toLowerCase()]).toBe(
            `Bearer ${UPSTREAM_KEY}`,
          );
          expect(JSON.stringify(request.headers)).not.toContain(minted.token);
        }
        const entries = await usage.waitFor(2);
        expect(entries.map((entry) => entry.jobId)).toEqual([jobId, jobId]);
      } finally {
        await new Promise<void>((resolveClose) => {
          server.close(() => resolveClose());
          if ("closeAllConnections" in server) server.closeAllConnections();
        });
      }
    });
  },
);
