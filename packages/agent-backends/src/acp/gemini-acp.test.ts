import { randomUUID } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { delimiter, dirname, join } from "node:path";
import { chooseAuthMethod, createProviderService } from "@deckhand/providers";
import { type CapturedRequest, type FakeModel, startFakeModel } from "@deckhand/testkit";
import type { AgentEvent } from "@deckhand/wire";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startTestWorkspace, type TestWorkspace } from "../../test/test-workspace.ts";
import type { AgentBackend } from "../backend.ts";
import { createAcpBackend } from "./acp-backend.ts";
import { type AcpLaunch, agentEnvironment } from "./agent-process.ts";

// The released Gemini CLI, started as Deckhand starts the built-in `gemini` provider, creating a
// file with its write_file tool against a Gemini API answered by the fake model. Not a
// dependency of the repository; opt in by installing it anywhere and naming its binary:
//   npm install --prefix /tmp/gemini @google/gemini-cli
//   GEMINI_BIN=/tmp/gemini/node_modules/.bin/gemini
const binary = process.env.GEMINI_BIN;

const TOKEN = "gemini-acp-test-token-8c1e";
const START_MS = 120_000;

/** One Gemini API streaming answer (`streamGenerateContent?alt=sse`) with these parts. */
function geminiStream(parts: unknown[]) {
  const chunk = {
    candidates: [{ content: { role: "model", parts }, finishReason: "STOP", index: 0 }],
    usageMetadata: { promptTokenCount: 11, candidatesTokenCount: 7, totalTokenCount: 18 },
    modelVersion: "gemini-2.5-flash",
  };
  return {
    headers: { "content-type": "text/event-stream" },
    chunks: [`data: ${JSON.stringify(chunk)}\r\n\r\n`],
  };
}

describe.skipIf(binary === undefined || !existsSync(binary))(
  "Gemini CLI creating a file over ACP",
  () => {
    let workspace: TestWorkspace;
    let fake: FakeModel;
    const backends: AgentBackend[] = [];

    beforeAll(async () => {
      workspace = await startTestWorkspace("deckhand-gemini-acp-", { token: TOKEN });
      fake = await startFakeModel();
    });

    beforeEach(() => {
      rmSync(join(workspace.worktree, "hello.txt"), { force: true });
    });

    afterAll(async () => {
      await Promise.all(backends.map((backend) => backend.dispose()));
      await fake?.close();
      await workspace?.close();
    });

    /** The model asks for write_file on its first turn, and says it is done once it ran. */
    function answer(request: CapturedRequest) {
      if (request.path.endsWith(":generateContent")) {
        // The CLI's own side questions (which model to route to, and the like): an empty JSON
        // object as the answer, which it takes for "no opinion".
        return {
          headers: { "content-type": "application/json" },
          chunks: [
            JSON.stringify({
              candidates: [
                { content: { role: "model", parts: [{ text: "{}" }] }, finishReason: "STOP" },
              ],
            }),
          ],
        };
      }
      if (!request.path.endsWith(":streamGenerateContent")) {
        return { headers: { "content-type": "application/json" }, chunks: ['{"totalTokens": 5}'] };
      }
      if (request.body.includes('"functionResponse"')) return geminiStream([{ text: "done" }]);
      return geminiStream([
        {
          functionCall: {
            name: "write_file",
            args: { file_path: join(workspace.worktree, "hello.txt"), content: "hello\n" },
          },
        },
      ]);
    }

    async function createFile(serveFileReads: boolean | undefined) {
      const home = join(workspace.root, `gemini-home-${randomUUID()}`);
      mkdirSync(home);
      const providers = createProviderService({
        configPath: join(workspace.root, "providers.json"),
        modelUpstreamConfigured: false,
        env: { ...process.env, PATH: `${dirname(binary!)}${delimiter}${process.env.PATH ?? ""}` },
      });
      const resolved = await providers.resolve("gemini").finally(() => providers.close());
      const launch: AcpLaunch = {
        executable: resolved.executable!,
        args: resolved.args,
        env: {
          ...resolved.env,
          HOME: home,
          GEMINI_API_KEY: "fake-gemini-key",
          GOOGLE_GEMINI_BASE_URL: fake.url,
          GEMINI_CLI_NO_RELAUNCH: "true",
        },
        unset: resolved.unset,
      };
      fake.respondWith(answer);
      const backend = createAcpBackend({
        context: {
          sessionId: randomUUID(),
          chatId: randomUUID(),
          worktreePath: workspace.worktree,
          workspaceAgent: { url: workspace.agent.url, token: TOKEN },
          modelProxy: null,
          resumeSessionId: null,
        },
        launch,
        agent: "gemini",
        serveFileReads: serveFileReads ?? resolved.serveFileReads,
        timeouts: { initializeMs: START_MS, sessionMs: START_MS, stopGraceMs: 2_000 },
        // It logs in with its API key, as Deckhand's sessions log it in.
        login: (methods, refusal) =>
          chooseAuthMethod({
            methods,
            env: agentEnvironment(launch),
            refusal,
            advice: resolved.loginAdvice,
            keysInEnv: true,
          }),
      });
      backends.push(backend);
      const events: AgentEvent[] = [];
      const result = await backend.prompt({
        messageId: randomUUID(),
        text: "Create hello.txt saying hello.",
        onEvent: async (event) => {
          events.push(event);
          if (event.type === "permission_request") {
            await backend.respondToPermission({
              requestId: event.request_id,
              outcome: "allow_once",
            });
          }
        },
      });
      return { result, events };
    }

    it(
      "creates the file, as the gemini provider is started",
      async () => {
        const { result, events } = await createFile(undefined);
        expect(result.stopReason).toBe("end_turn");
        expect(readFileSync(join(workspace.worktree, "hello.txt"), "utf8")).toBe("hello\n");
        // The call it asked about was shown as an edit of hello.txt before the request.
        expect(events.find((event) => event.type === "tool_call")).toMatchObject({
          kind: "edit",
          locations: ["hello.txt"],
        });
      },
      START_MS * 2,
    );

    it(
      "fails write_file when told Deckhand serves its reads (what it did before)",
      async () => {
        const { events } = await createFile(true);
        expect(existsSync(join(workspace.worktree, "hello.txt"))).toBe(false);
        // Its read of the missing file failed the tool, though the answer said "not found".
        expect(events).toContainEqual(
          expect.objectContaining({
            type: "tool_update",
            status: "failed",
            content: expect.stringContaining("Error checking existing file: Resource not found"),
          }),
        );
      },
      START_MS * 2,
    );
  },
);
