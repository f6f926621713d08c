import { randomUUID } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { type RunningAgent, resolveAgentConfig, startAgent } from "@deckhand/agent-app";
import { type FakeModel, startFakeModel, turn } from "@deckhand/testkit";
import { type AgentEvent, AgentEventSchema } from "@deckhand/wire";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AgentBackend } from "../backend.ts";
import { createAcpBackend } from "./acp-backend.ts";

// A real ACP agent against the fake model: Zed's codex-acp, which is not a dependency of the
// repository (a 230 MB binary). Opt in by installing it anywhere and naming its binary:
//   npm install --prefix /tmp/codex-acp @zed-industries/codex-acp
//   CODEX_ACP_BIN=/tmp/codex-acp/node_modules/@zed-industries/codex-acp-linux-x64/bin/codex-acp
const binary = process.env.CODEX_ACP_BIN;

const TOKEN = "codex-acp-test-token-5e1a";
const CHAT = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d";
/** A model in codex's bundled catalog, so it offers its tools. */
const MODEL = "gpt-5.3-codex";

describe.skipIf(binary === undefined || !existsSync(binary))(
  "codex-acp against the fake model",
  () => {
    let agent: RunningAgent;
    let fake: FakeModel;
    let root: string;
    let worktree: string;
    let backend: AgentBackend;

    beforeAll(async () => {
      root = realpathSync(mkdtempSync(join(tmpdir(), "deckhand-codex-acp-")));
      worktree = join(root, "tree");
      mkdirSync(worktree);
      mkdirSync(join(root, "codex-home"));
      const quiet = new Writable({ write: (_chunk, _encoding, callback) => callback() });
      agent = await startAgent(
        resolveAgentConfig({ listen: "127.0.0.1:0", dir: root, token: TOKEN, logLevel: "warn" }),
        { logDestination: quiet },
      );
      fake = await startFakeModel();
      backend = createAcpBackend({
        context: {
          sessionId: randomUUID(),
          chatId: CHAT,
          worktreePath: worktree,
          workspaceAgent: { url: agent.url, token: TOKEN },
          modelProxy: null,
          resumeSessionId: null,
        },
        launch: {
          executable: binary!,
          args: [
            "-c",
            "model_provider=fake",
            "-c",
            `model=${MODEL}`,
            "-c",
            `model_providers.fake={ name = "fake", base_url = "${fake.url}/v1", env_key = "FAKE_MODEL_KEY", wire_api = "responses" }`,
            "-c",
            "analytics.enabled=false",
            "-c",
            'sandbox_mode="workspace-write"',
          ],
          env: { CODEX_HOME: join(root, "codex-home"), FAKE_MODEL_KEY: "fake-model-key-1234" },
          unset: ["OPENAI_API_KEY"],
        },
        agent: "codex",
        timeouts: { initializeMs: 20_000, cancelMs: 3_000, stopGraceMs: 1_000 },
      });
    }, 30_000);

    afterAll(async () => {
      await backend?.dispose();
      await fake?.close();
      await agent?.close();
      if (root !== undefined) rmSync(root, { recursive: true, force: true });
    });

    it("answers a prompt with the fake model's text and applies a patch", async () => {
      const session = await backend.ensureSession();
      expect(session.resumed).toBe(false);
      fake.script([
        turn.customToolCall(
          "apply_patch",
          "*** Begin Patch\n*** Add File: hello.txt\n+hello from codex\n*** End Patch\n",
        ),
        turn.text("patched"),
      ]);
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
      expect(fake.requests).toHaveLength(2);
      expect(result).toMatchObject({ stopReason: "end_turn" });
      expect(result.text).toContain("patched");
      // codex-acp applies patches itself (not through fs/write_text_file), after asking.
      expect(events.map((event) => event.type)).toEqual([
        "tool_call",
        "permission_request",
        "permission_resolved",
        "tool_update",
        "text",
        "turn_end",
      ]);
      expect(events[0]).toMatchObject({ kind: "edit", locations: ["hello.txt"] });
      expect(readFileSync(join(worktree, "hello.txt"), "utf8")).toBe("hello from codex\n");
    }, 60_000);
  },
);
