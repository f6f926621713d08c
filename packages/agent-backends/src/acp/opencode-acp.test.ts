import { randomUUID } from "node:crypto";
import { existsSync, mkdirSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { delimiter, dirname, join } from "node:path";
import {
  createModelProxy,
  InMemoryModelTokenStore,
  InMemoryUsageRecorder,
  mintModelToken,
} from "@deckhand/model-proxy";
import { createProviderService } from "@deckhand/providers";
import { type FakeModel, startFakeModel } from "@deckhand/testkit";
import { type AgentEvent, WireHeader, WirePath } from "@deckhand/wire";
import { type ServerType, serve } from "@hono/node-server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestWorkspace, type TestWorkspace } from "../../test/test-workspace.ts";
import type { AgentBackend } from "../backend.ts";
import { createAcpBackend } from "./acp-backend.ts";

// The real OpenCode, started as Deckhand starts the built-in `opencode` provider, against the
// model proxy and the fake model. Not a dependency of the repository; opt in by installing it
// anywhere and naming its binary:
//   npm install --prefix /tmp/opencode opencode-ai
//   OPENCODE_BIN=/tmp/opencode/node_modules/opencode-linux-x64/bin/opencode
// It installs its OpenAI-compatible provider package from the npm registry on first use.
const binary = process.env.OPENCODE_BIN;

const TOKEN = "opencode-acp-test-token-3f9d";
const UPSTREAM_KEY = "sk-fake-upstream-key-opencode-41";
/** The upstream's models as config.json would list them; the first is the default. */
const MODELS = ["fake-model-1", "fake-model-2"];
/** opencode takes 16-38 s to initialize and 15-22 s to open a session on a loaded machine. */
const START_MS = 180_000;

describe.skipIf(binary === undefined || !existsSync(binary))(
  "opencode acp against the model proxy and the fake model",
  () => {
    let workspace: TestWorkspace;
    let fake: FakeModel;
    let server: ServerType;
    let backend: AgentBackend | undefined;

    beforeAll(async () => {
      workspace = await startTestWorkspace("deckhand-opencode-acp-", { token: TOKEN });
      fake = await startFakeModel();
    });

    afterAll(async () => {
      await backend?.dispose();
      await new Promise<void>((resolveClose) => {
        if (server === undefined) return resolveClose();
        server.close(() => resolveClose());
        if ("closeAllConnections" in server) server.closeAllConnections();
      });
      await fake?.close();
      await workspace?.close();
    });

    it(
      "asks the upstream's first model through the proxy, never opencode's own service",
      async () => {
        const tokens = new InMemoryModelTokenStore();
        const usage = new InMemoryUsageRecorder();
        const proxy = createModelProxy({
          upstreams: {
            opencode: { kind: "openai", baseUrl: `${fake.url}/v1`, apiKey: UPSTREAM_KEY },
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
        const proxyUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}${WirePath.modelProvider}/opencode`;
        const jobId = `agent-session:${randomUUID()}`;
        const minted = await mintModelToken(tokens, { jobId, ttlMs: 10 * 60_000 });
        const providers = createProviderService({
          configPath: join(workspace.root, "providers.json"),
          modelUpstreamConfigured: true,
          upstreamModels: () => MODELS,
          env: { ...process.env, PATH: `${dirname(binary!)}${delimiter}${process.env.PATH ?? ""}` },
        });
        const resolved = await providers
          .resolve("opencode", { proxy: { proxyUrl, token: minted.token, jobId } })
          .finally(() => providers.close());
        // Its own state in the test's directory, so no login or config of this machine counts.
        const home = join(workspace.root, "opencode-home");
        mkdirSync(home);
        const xdg = Object.fromEntries(
          ["CONFIG", "DATA", "CACHE", "STATE"].map((kind) => [
            `XDG_${kind}_HOME`,
            join(home, kind.toLowerCase()),
          ]),
        );
        backend = createAcpBackend({
          context: {
            sessionId: randomUUID(),
            chatId: randomUUID(),
            worktreePath: workspace.worktree,
            workspaceAgent: { url: workspace.agent.url, token: TOKEN },
            modelProxy: { url: proxyUrl, token: minted.token, jobId },
            resumeSessionId: null,
          },
          launch: {
            executable: resolved.executable!,
            args: resolved.args,
            env: { ...resolved.env, ...xdg },
            unset: resolved.unset,
          },
          agent: "opencode",
          timeouts: { initializeMs: START_MS, sessionMs: START_MS, stopGraceMs: 2_000 },
        });
        await backend.ensureSession();
        const events: AgentEvent[] = [];
        const result = await backend.prompt({
          messageId: randomUUID(),
          text: "Say hello.",
          onEvent: (event) => {
            events.push(event);
          },
        });
        expect(result.stopReason).toBe("end_turn");
        expect(result.text).toContain("hello from chat");
        // Every model request went through the proxy to the upstream, for a declared model.
        const completions = fake.requests.filter((request) => request.api === "chat_completions");
        expect(completions.length).toBeGreaterThan(0);
        for (const request of completions) {
          expect(request.headers[WireHeader.authorization.toLowerCase()]).toBe(
            `Bearer ${UPSTREAM_KEY}`,
          );
          expect(MODELS).toContain((request.json as { model?: string }).model);
        }
        expect(
          completions.some((request) => (request.json as { model?: string }).model === MODELS[0]),
        ).toBe(true);
        expect((await usage.waitFor(completions.length)).map((entry) => entry.jobId)).toContain(
          jobId,
        );
        expect(JSON.stringify(events)).not.toContain(minted.token);
      },
      START_MS * 2 + 60_000,
    );
  },
);
