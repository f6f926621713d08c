// `deckhand providers` against a real server (the server tests' harness), not a stand-in: what
// the CLI sends must be what the server accepts, and what it prints must follow what it answers.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
// The CLI does not depend on testkit; the scripted agent is the same file the server tests use.
import { scriptedAcpAgentCommand } from "../../../packages/testkit/src/acp-agent/scripted-acp-command.ts";
import { Cleanups, startTestServer, type TestServer, tempDir } from "../../server/test/harness.ts";
import { runProvidersCommand, SERVER_URL_ENV } from "./providers-command.ts";

const cleanups = new Cleanups();
let harness: TestServer;
let configPath: string;

beforeAll(async () => {
  const dataDir = tempDir(cleanups);
  configPath = join(dataDir, "providers.json");
  harness = await startTestServer(cleanups, { dataDir, config: { workspaceAgent: false } });
});
afterAll(() => cleanups.run());

async function run(...argv: string[]) {
  let stdout = "";
  let stderr = "";
  const code = await runProvidersCommand(argv, {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
    env: { [SERVER_URL_ENV]: harness.server.url },
    fetch: globalThis.fetch,
  });
  return { code, stdout, stderr };
}

function providersInFile(): Record<string, Record<string, unknown>> {
  return JSON.parse(readFileSync(configPath, "utf8")).providers;
}

describe("deckhand providers add, against a running server", () => {
  it("adds a custom ACP agent that answers its probe, and prints it ready", async () => {
    const added = await run(
      "add",
      "scripted",
      "--label",
      "Scripted",
      "--env",
      "A=1",
      "--env",
      "B=2",
      "--",
      ...scriptedAcpAgentCommand("normal"),
    );
    expect(added.stderr).toBe("");
    expect(added.code).toBe(0);
    expect(added.stdout).toMatch(/^scripted +ready +1\.2\.3 +Scripted\n/);
    expect(added.stdout).toContain("models:   scripted-large, scripted-small");
    expect(providersInFile().scripted).toMatchObject({ env: { A: "1", B: "2" } });
  });

  it("refuses an id that exists, a built-in's included, unless --force", async () => {
    const before = readFileSync(configPath, "utf8");
    const again = await run("add", "scripted", "--", ...scriptedAcpAgentCommand("normal"));
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('provider "scripted" exists already; pass --force');
    const builtin = await run("add", "codex", "--", "my-codex");
    expect(builtin.code).toBe(1);
    expect(builtin.stderr).toContain('built-in provider "codex" exists already');
    expect(readFileSync(configPath, "utf8")).toBe(before);
  });

  it("replaces the entry's env with --force instead of keeping stale variables", async () => {
    const replaced = await run(
      "add",
      "scripted",
      "--force",
      "--env",
      "A=3",
      "--",
      ...scriptedAcpAgentCommand("normal"),
    );
    expect(replaced.code).toBe(0);
    const entry = providersInFile().scripted!;
    expect(entry.env).toEqual({ A: "3" });
    // No --label this time: the old label goes too.
    expect(entry).not.toHaveProperty("label");
    expect(replaced.stdout).toMatch(/^scripted +ready +1\.2\.3 +scripted\n/);
  });

  it("exits 1 with the diagnostic when the new provider is not ready, keeping it in the file", async () => {
    const missing = await run("add", "missing", "--", "no-such-agent-deckhand-test", "--acp");
    expect(missing.code).toBe(1);
    expect(missing.stdout).toMatch(/^missing +not_installed/);
    expect(missing.stderr).toContain('"missing" was added but is not_installed');
    expect(missing.stderr).toContain("resolved: not found");
    expect(providersInFile().missing).toMatchObject({
      command: ["no-such-agent-deckhand-test", "--acp"],
    });

    const failing = await run("add", "crashing", "--", ...scriptedAcpAgentCommand("crash"));
    expect(failing.code).toBe(1);
    expect(failing.stderr).toContain('"crashing" was added but is error');
    expect(failing.stderr).toContain("last probe error:");
  });
});
