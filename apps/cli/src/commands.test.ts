import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import packageJson from "../package.json" with { type: "json" };
import { usage } from "./commands.ts";

const cliEntry = fileURLToPath(new URL("./bin.ts", import.meta.url));
const recorder = fileURLToPath(
  new URL("../test/fixtures/record-loaded-modules.ts", import.meta.url),
);
const validSpec = fileURLToPath(new URL("../test/fixtures/batch/valid.yaml", import.meta.url));

/** What `deckhand up` needs and no lighter command should pay for at start-up. */
const serverModules =
  /\/apps\/server\/|\/apps\/agent\/|\/packages\/workspace-agent\/|\/db\/src\/|@electric-sql|drizzle-orm|\/hono\/|\/pino\/|\/ws\//;

const scratchDirectories: string[] = [];
afterEach(() => {
  for (const directory of scratchDirectories.splice(0)) {
    rmSync(directory, { recursive: true, force: true });
  }
});

/**
 * Runs `deckhand <args>` from the sources in a fresh process, as `pnpm deckhand` does; returns
 * its exit code, its output and every module it loaded.
 */
function runFromSources(args: string[]): {
  status: number | null;
  stdout: string;
  loaded: string[];
} {
  const scratch = mkdtempSync(join(tmpdir(), "deckhand-cli-modules-"));
  scratchDirectories.push(scratch);
  const file = join(scratch, "modules.txt");
  const result = spawnSync(
    process.execPath,
    ["--conditions=source", "--import", recorder, cliEntry, ...args],
    { env: { ...process.env, DECKHAND_TEST_LOADED_MODULES: file }, stdio: "pipe" },
  );
  return {
    status: result.status,
    stdout: result.stdout.toString("utf8"),
    loaded: readFileSync(file, "utf8").split("\n"),
  };
}

describe("deckhand command dispatch", () => {
  it("loads neither the server, the agent nor the batch engine for version and help", () => {
    for (const command of ["version", "help"]) {
      const { status, stdout, loaded } = runFromSources([command]);
      expect(status).toBe(0);
      expect(stdout).toBe(command === "version" ? `${packageJson.version}\n` : usage);
      expect(loaded.some((url) => url.endsWith("/apps/cli/src/commands.ts"))).toBe(true);
      expect(loaded.filter((url) => serverModules.test(url))).toEqual([]);
      expect(loaded.filter((url) => /batch-spec|\/zod\/|\/yaml\//.test(url))).toEqual([]);
    }
  });

  it("loads the batch-spec package but not the server or the agent for batch validate", () => {
    const { status, stdout, loaded } = runFromSources(["batch", "validate", validSpec]);
    expect(status).toBe(0);
    expect(stdout).toContain(": OK (version 3");
    expect(loaded.some((url) => url.includes("/packages/batch-spec/src/"))).toBe(true);
    expect(loaded.filter((url) => serverModules.test(url))).toEqual([]);
    // The batch engine (git, repositories, workspaces) is for "batch workspaces" only.
    expect(loaded.filter((url) => url.includes("/packages/batches/src/"))).toEqual([]);
  });

  it("sends a spec to a server without loading the spec parser, the server or the database", () => {
    // Nothing listens on port 1: the command gets as far as sending the run, and says so.
    const { status, loaded } = runFromSources([
      "batch",
      "preview",
      validSpec,
      "--server",
      "http://127.0.0.1:1",
    ]);
    expect(status).toBe(1);
    expect(loaded.some((url) => url.endsWith("/apps/cli/src/batch-run-command.ts"))).toBe(true);
    expect(loaded.filter((url) => serverModules.test(url))).toEqual([]);
    // The server parses the spec it is sent.
    expect(loaded.filter((url) => /\/packages\/batch-spec\/|\/yaml\//.test(url))).toEqual([]);
  });

  it("runs a spec without --server on the batch engine alone, not the server around it", () => {
    const dataDir = mkdtempSync(join(tmpdir(), "deckhand-cli-standalone-"));
    scratchDirectories.push(dataDir);
    // No code host is configured: the run resolves no workspace and completes.
    const { status, stdout, loaded } = runFromSources([
      "batch",
      "preview",
      validSpec,
      "--data-dir",
      dataDir,
      "--json",
    ]);
    expect(status).toBe(0);
    expect(stdout).toContain('"type":"run_finished","status":"completed"');
    expect(loaded.some((url) => url.endsWith("/apps/server/src/batch-runner.ts"))).toBe(true);
    expect(loaded.some((url) => url.includes("/db/src/"))).toBe(true);
    // Not the HTTP API, its streams, the workspace agent or the session domain's
    // hubs and turns: the standalone run starts only what a batch run needs.
    expect(
      loaded.filter((url) =>
        /\/apps\/server\/src\/(start-server|create-server-app|api-routes|server-http|event-stream-socket|workspace-sessions|server-services|session-[a-z-]+)\.ts$/.test(
          url,
        ),
      ),
    ).toEqual([]);
    expect(
      loaded.filter((url) => /\/apps\/agent\/|\/packages\/(sessions|agent-backends)\//.test(url)),
    ).toEqual([]);
  });
});
