// `deckhand health` against a real server (the server tests' harness), a real workspace agent
// and a real executor health file: the images' HEALTHCHECK runs exactly this.
import { createServer } from "node:net";
import { homedir } from "node:os";
import { join } from "node:path";
import { ServerPath, WireEnv } from "@deckhand/wire";
import { resolveAgentConfig, startAgent } from "@deckhand/workspace-agent";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Cleanups, startTestServer, type TestServer, tempDir } from "../../server/test/harness.ts";
import { startExecutorHealthFile } from "./executor-health.ts";
import { type HealthIo, runHealthCommand } from "./health-command.ts";

const ADMIN_TOKEN = "health-check-admin-token-0123456789";
const AGENT_TOKEN = "health-check-agent-token-0123456789";

const cleanups = new Cleanups();
let open: TestServer;
let guarded: TestServer;
let agentUrl: string;

beforeAll(async () => {
  open = await startTestServer(cleanups, {
    dataDir: tempDir(cleanups),
    config: { workspaceAgent: false },
  });
  guarded = await startTestServer(cleanups, {
    dataDir: tempDir(cleanups),
    config: { workspaceAgent: false, adminToken: ADMIN_TOKEN, requireAuth: true },
  });
  const agent = await startAgent(
    resolveAgentConfig(
      { listen: "127.0.0.1:0", dir: tempDir(cleanups), token: AGENT_TOKEN, logLevel: "silent" },
      {},
    ),
  );
  cleanups.add(() => agent.close());
  agentUrl = agent.url;
});
afterAll(() => cleanups.run());

async function health(argv: string[], environment: NodeJS.ProcessEnv = {}) {
  let stdout = "";
  let stderr = "";
  const io: HealthIo = {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
    environment,
    cwd: tempDir(cleanups),
    homeDir: homedir(),
    fetch: globalThis.fetch,
  };
  const code = await runHealthCommand(argv, io);
  return { code, stdout, stderr };
}

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolveListen) => server.listen(0, "127.0.0.1", resolveListen));
  const { port } = server.address() as { port: number };
  await new Promise((resolveClose) => server.close(resolveClose));
  return port;
}

describe("deckhand health server", () => {
  it("finds the server where DECKHAND_LISTEN says it listens, a wildcard address on loopback", async () => {
    const port = new URL(open.server.url).port;
    const result = await health(["server"], { [WireEnv.serverListen]: `0.0.0.0:${port}` });
    expect(result).toEqual({
      code: 0,
      stdout: `server http://127.0.0.1:${port} is healthy (version ${
        JSON.parse((await open.api("GET", ServerPath.health)).text).version
      })\n`,
      stderr: "",
    });
  });

  it("asks the server's default address when DECKHAND_LISTEN is not set", async () => {
    const result = await health(["server", "--timeout-ms", "2000"]);
    // Whatever answers there on this machine, if anything, the check went to the default.
    expect(`${result.stdout}${result.stderr}`).toMatch(/^server http:\/\/127\.0\.0\.1:7420[: ]/);
  });

  it("sends DECKHAND_ADMIN_TOKEN, and without it says to set it", async () => {
    const refused = await health(["server", "--url", guarded.server.url]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`server ${guarded.server.url}: `);
    expect(refused.stderr).toContain(
      "set DECKHAND_ADMIN_TOKEN where this check runs (the server needs a token beyond loopback)",
    );
    const accepted = await health(["server", "--url", guarded.server.url], {
      [WireEnv.adminToken]: ADMIN_TOKEN,
    });
    expect(accepted.code).toBe(0);
    expect(accepted.stdout).toContain("is healthy");
  });

  it("is unhealthy when nothing answers", async () => {
    const port = await closedPort();
    const result = await health(["server", "--url", `http://127.0.0.1:${port}`]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(new RegExp(`^server http://127\\.0\\.0\\.1:${port}: .+\\n$`));
  });
});

describe("deckhand health agent", () => {
  it("sends DECKHAND_AGENT_TOKEN to the agent's health route", async () => {
    const result = await health(["agent", "--url", agentUrl], {
      [WireEnv.agentToken]: AGENT_TOKEN,
    });
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(
      /^agent http:\/\/127\.0\.0\.1:\d+ is healthy: 0 processes running in /,
    );
  });

  it("says to set the token when the agent refuses the check", async () => {
    const result = await health(["agent", "--url", agentUrl]);
    expect(result).toEqual({
      code: 1,
      stdout: "",
      stderr: `agent ${agentUrl} answered 401; set DECKHAND_AGENT_TOKEN where this check runs\n`,
    });
  });
});

describe("deckhand health executor", () => {
  it("reads the health file in DECKHAND_DATA_DIR, as the executor does", async () => {
    const dataDir = tempDir(cleanups);
    const missing = await health(["executor"], { [WireEnv.serverDataDir]: dataDir });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("the executor is not running there, or not ready yet");
    const file = await startExecutorHealthFile({
      dataDir,
      executorId: "builder-7",
      runningJobs: () => 0,
      redact: (text) => text,
    });
    cleanups.add(() => file.close());
    const healthy = await health(["executor"], { [WireEnv.serverDataDir]: dataDir });
    expect(healthy).toEqual({
      code: 0,
      stdout: "executor builder-7 is healthy: 0 jobs running, queue reachable\n",
      stderr: "",
    });
    const flagged = await health(["executor", "--data-dir", join(dataDir, "elsewhere")], {
      [WireEnv.serverDataDir]: dataDir,
    });
    expect(flagged.code).toBe(1);
  });
});

describe("deckhand health usage", () => {
  it.each([
    [[], "say what to check: server, agent or executor"],
    [["database"], 'cannot check "database"; use server, agent or executor'],
    [["server", "agent"], 'cannot check "server agent"; use server, agent or executor'],
    [["executor", "--url", "http://127.0.0.1:1"], "an executor has no --url"],
    [
      ["server", "--data-dir", "/data"],
      "--data-dir is for an executor; a server is asked at --url",
    ],
    [["agent", "--url", "ftp://x"], '--url "ftp://x" is not an http:// or https:// URL'],
    [["server", "--timeout-ms", "0"], "--timeout-ms must be a whole number from 1 to 600000"],
  ])("refuses %j with exit code 2", async (argv, message) => {
    const result = await health(argv);
    expect(result).toEqual({
      code: 2,
      stdout: "",
      stderr: `deckhand health: ${message}\nRun "deckhand health --help".\n`,
    });
  });

  it("refuses a DECKHAND_LISTEN it cannot read, naming it", async () => {
    const result = await health(["server"], { [WireEnv.serverListen]: "everywhere" });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('DECKHAND_LISTEN "everywhere" is not host:port');
  });

  it("prints its help", async () => {
    const result = await health(["--help"]);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("Usage: deckhand health <server|agent|executor> [options]");
  });
});
