import { execFile } from "node:child_process";
import { mkdtempSync, realpathSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { ProcessClient } from "@deckhand/process-manager";
import { WireEnv } from "@deckhand/wire";
import { afterEach, describe, expect, it } from "vitest";
import { eventually, isAlive, type SpawnedAgent, spawnAgent } from "./spawn-agent.ts";

const repositoryRoot = fileURLToPath(new URL("../../..", import.meta.url));
const cliEntry = join(repositoryRoot, "apps/cli/src/bin.ts");
const TOKEN = "cli-test-token-51d2";

describe("deckhand agent (the CLI, as a user runs it)", () => {
  let agent: SpawnedAgent | undefined;

  afterEach(async () => {
    if (agent && agent.child.exitCode === null && agent.child.signalCode === null) {
      agent.child.kill("SIGKILL");
      await agent.exited;
    }
    agent = undefined;
  });

  it("serves with a token and, on SIGTERM, stops every process group it started and exits 0", async () => {
    const root = realpathSync(mkdtempSync(join(tmpdir(), "deckhand-cli-agent-")));
    agent = await spawnAgent(process.execPath, [
      "--conditions=source",
      cliEntry,
      "agent",
      "--listen",
      "127.0.0.1:0",
      "--dir",
      root,
      "--token",
      TOKEN,
    ]);
    const client = new ProcessClient({ baseUrl: agent.url, token: TOKEN });
    // A process group with a grandchild: both must be gone after shutdown.
    const { id } = await client.start({
      command: "sleep 300 & echo $!; wait",
      background: true,
    });
    let grandchild = 0;
    for (let attempt = 0; attempt < 200 && !grandchild; attempt++) {
      const { output } = await client.output(id);
      grandchild = Number.parseInt(output.trim(), 10) || 0;
      if (!grandchild) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(grandchild).toBeGreaterThan(0);
    expect(isAlive(grandchild)).toBe(true);

    agent.child.kill("SIGTERM");
    const { code } = await agent.exited;
    expect(code).toBe(0);
    expect(await eventually(() => !isAlive(grandchild))).toBe(true);
    const log = agent.output.join("\n");
    expect(log).toContain("shutting down");
    expect(log).not.toContain(TOKEN);
  });

  it("refuses a non-loopback address without a token, with a clear message and exit code 2", async () => {
    const environment = { ...process.env };
    delete environment[WireEnv.agentToken];
    const run = promisify(execFile);
    const failure = await run(
      process.execPath,
      ["--conditions=source", cliEntry, "agent", "--listen", "0.0.0.0:0"],
      { env: environment },
    ).catch((error: { code: number; stderr: string }) => error);
    expect(failure).toMatchObject({ code: 2 });
    expect((failure as { stderr: string }).stderr).toContain(
      "deckhand agent: refusing to listen on 0.0.0.0 without a token",
    );
  });

  it("prints usage for help and an error for an unknown command", async () => {
    const run = promisify(execFile);
    const help = await run(process.execPath, ["--conditions=source", cliEntry, "help"]);
    expect(help.stdout).toContain("Usage: deckhand <command>");
    const unknown = await run(process.execPath, ["--conditions=source", cliEntry, "nope"]).catch(
      (error: { code: number; stderr: string }) => error,
    );
    expect(unknown).toMatchObject({ code: 2 });
    expect((unknown as { stderr: string }).stderr).toContain('unknown command "nope"');
  });
});
