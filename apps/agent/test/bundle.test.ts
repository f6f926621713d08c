import { execFileSync } from "node:child_process";
import { copyFileSync, mkdtempSync, readFileSync, realpathSync, rmSync } from "node:fs";
import { builtinModules } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { WireEnv, WireHeader, WirePath } from "@deckhand/wire";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type SpawnedAgent, spawnAgent } from "./spawn-agent.ts";

const agentDirectory = fileURLToPath(new URL("..", import.meta.url));
const TOKEN = "bundle-test-token-0c9e";

describe("standalone agent bundle", () => {
  let outside: string;
  let agent: SpawnedAgent | undefined;

  beforeAll(() => {
    // Build the bundle from the current sources, then run it from a directory outside the
    // repository, where no node_modules can be found: only Node and the one file.
    execFileSync(
      join(agentDirectory, "node_modules/.bin/tsup"),
      ["--config", "tsup.bundle.config.ts"],
      { cwd: agentDirectory, stdio: "pipe" },
    );
    outside = realpathSync(mkdtempSync(join(tmpdir(), "deckhand-bundle-")));
    copyFileSync(
      join(agentDirectory, "dist/deckhand-agent.mjs"),
      join(outside, "deckhand-agent.mjs"),
    );
  });

  afterAll(async () => {
    if (agent && agent.child.exitCode === null) {
      agent.child.kill("SIGKILL");
      await agent.exited;
    }
    rmSync(outside, { recursive: true, force: true });
  });

  it("has no imports left but Node's own modules", () => {
    const source = readFileSync(join(outside, "deckhand-agent.mjs"), "utf8");
    // Statements only: anchored at a line start, so import examples inside bundled doc
    // comments (" * import { Hono } from 'hono'") do not count.
    const statements =
      /^\s*(?:import|export)\b[^;]*?\bfrom\s*["']([^"']+)["']|\brequire\(["']([^"']+)["']\)|\bimport\(["']([^"']+)["']\)/gm;
    const specifiers = [...source.matchAll(statements)]
      .map((match) => match[1] ?? match[2] ?? match[3]!)
      .filter((specifier) => !specifier.startsWith("node:"));
    const builtins = new Set(builtinModules);
    expect(specifiers.filter((specifier) => !builtins.has(specifier))).toEqual([]);
  });

  it("runs from a directory outside the repository with only Node", async () => {
    const workspace = join(outside, "workspace");
    execFileSync("mkdir", ["-p", workspace]);
    agent = await spawnAgent(
      process.execPath,
      [join(outside, "deckhand-agent.mjs"), "--listen", "127.0.0.1:0", "--dir", workspace],
      {
        cwd: outside,
        env: { PATH: process.env.PATH ?? "/usr/bin:/bin", [WireEnv.agentToken]: TOKEN },
      },
    );
    const headers = { [WireHeader.authorization]: `Bearer ${TOKEN}` };
    const health = await fetch(`${agent.url}${WirePath.agentHealth}`, { headers });
    expect(await health.json()).toMatchObject({ status: "ok", root: workspace });

    const started = await fetch(`${agent.url}${WirePath.processes}/start`, {
      method: "POST",
      headers: { ...headers, "content-type": "application/json" },
      body: JSON.stringify({ command: "echo bundled && pwd" }),
    });
    const { id } = (await started.json()) as { id: string };
    const output = await fetch(`${agent.url}${WirePath.processes}/${id}/output?wait=true`, {
      headers,
    });
    expect(await output.json()).toMatchObject({
      output: `bundled\n${workspace}\n`,
      running: false,
      exit_code: 0,
    });

    agent.child.kill("SIGTERM");
    expect((await agent.exited).code).toBe(0);
  });
});
