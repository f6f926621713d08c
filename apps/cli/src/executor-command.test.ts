import { spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { BatchesError } from "@deckhand/batches";
import { createDb } from "@deckhand/db";
import { createPostgresTestDatabase, testPostgresUrl } from "@deckhand/testkit";
import { WireEnv } from "@deckhand/wire";
import { afterEach, describe, expect, it } from "vitest";
import {
  type ExecutorIo,
  ExecutorUsageError,
  executorUsage,
  parseExecutorArguments,
  runExecutorCommand,
} from "./executor-command.ts";
import { checkExecutorHealth, EXECUTOR_HEALTH_FILE } from "./executor-health.ts";

const cliEntry = fileURLToPath(new URL("./bin.ts", import.meta.url));
const cliRoot = fileURLToPath(new URL("..", import.meta.url));
const URL_A = "postgres://deckhand:s3cret-pw@db.internal:5432/deckhand";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function scratchDirectory(): string {
  const directory = mkdtempSync(join(tmpdir(), "deckhand-executor-"));
  cleanups.push(() => rmSync(directory, { recursive: true, force: true }));
  return directory;
}

function io(
  environment: NodeJS.ProcessEnv = {},
): Pick<ExecutorIo, "environment" | "cwd" | "homeDir"> {
  return { environment, cwd: scratchDirectory(), homeDir: scratchDirectory() };
}

async function settings(argv: string[], environment: NodeJS.ProcessEnv = {}) {
  const parsed = await parseExecutorArguments(argv, io(environment));
  if (parsed === "help") throw new Error("expected settings, got help");
  return parsed.settings;
}

async function usageError(argv: string[], environment: NodeJS.ProcessEnv = {}): Promise<string> {
  const error = await parseExecutorArguments(argv, io(environment)).then(
    () => {
      throw new Error("expected a usage error");
    },
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(ExecutorUsageError);
  return (error as Error).message;
}

describe("deckhand executor arguments", () => {
  it("refuses to start without PostgreSQL, saying why the embedded database cannot serve", async () => {
    const message = await usageError(["-j", "2"]);
    expect(message).toMatch(/--database-url URL or set DATABASE_URL/);
    expect(message).toMatch(/embedded database \(PGlite\) lives inside the one process/);
  });

  it("runs over the executor API with an executor token and --server-url, holding no database", async () => {
    const environment = {
      [WireEnv.executorToken]: "dhexe_secret-token",
      DATABASE_URL: "postgres://env:pw@localhost/deckhand",
    };
    const over = await settings(["--server-url", "http://deckhand.internal:7420/"], environment);
    expect(over).toMatchObject({
      executorToken: "dhexe_secret-token",
      databaseUrl: null,
      serverUrl: "http://deckhand.internal:7420",
    });
    expect(await usageError([], environment)).toMatch(
      `${WireEnv.executorToken} is set: pass --server-url URL`,
    );
    const both = await usageError(
      ["--server-url", "http://deckhand.internal:7420", "--database-url", URL_A],
      environment,
    );
    expect(both).toMatch(/either --database-url or an executor token/);
    expect(both).not.toContain("s3cret-pw");
    // Without either, the message leads with the executor token.
    expect(await usageError([])).toMatch(
      `pass --server-url URL with an executor token in ${WireEnv.executorToken}`,
    );
  });

  it("takes the database from the flag, else DATABASE_URL, else config.json", async () => {
    const environment = { DATABASE_URL: "postgres://env@localhost/deckhand" };
    expect((await settings(["--database-url", URL_A], environment)).databaseUrl).toBe(URL_A);
    expect((await settings([], environment)).databaseUrl).toBe(environment.DATABASE_URL);
    // An empty variable counts as unset.
    const dataDir = scratchDirectory();
    writeFileSync(
      join(dataDir, "config.json"),
      JSON.stringify({ databaseUrl: URL_A, listen: "0.0.0.0:7420" }),
    );
    expect((await settings(["--data-dir", dataDir], { DATABASE_URL: "" })).databaseUrl).toBe(URL_A);
  });

  it("refuses a database URL that is not PostgreSQL without printing it", async () => {
    const message = await usageError(["--database-url", "mysql://root:hunter22@db/x"]);
    expect(message).toMatch(/--database-url is not a PostgreSQL URL/);
    expect(message).not.toContain("hunter22");
    expect(await usageError([], { DATABASE_URL: "file:./db" })).toMatch(
      /DATABASE_URL is not a PostgreSQL URL/,
    );
  });

  it("reads -j, defaulting to the CPU count", async () => {
    expect((await settings(["--database-url", URL_A])).concurrency).toBe(
      Math.min(availableParallelism(), 256),
    );
    expect((await settings(["--database-url", URL_A, "-j", "4"])).concurrency).toBe(4);
    expect((await settings(["--database-url", URL_A, "--concurrency", "12"])).concurrency).toBe(12);
    for (const bad of ["0", "-1", "2.5", "many", "257", ""]) {
      expect(await usageError(["--database-url", URL_A, `--concurrency=${bad}`])).toMatch(
        /-j must be a whole number from 1 to 256/,
      );
    }
  });

  it("checks the lease, grace, log level, server URL and id", async () => {
    const base = ["--database-url", URL_A];
    expect(await settings(base)).toMatchObject({
      leaseMs: 30_000,
      graceMs: 10_000,
      logLevel: "info",
      serverUrl: null,
      id: null,
    });
    expect(
      await settings([
        ...base,
        "--lease-ms",
        "2000",
        "--grace-ms",
        "0",
        "--log-level",
        "debug",
        "--server-url",
        "http://deckhand.internal:7420/",
        "--id",
        "builder-3",
      ]),
    ).toMatchObject({
      leaseMs: 2_000,
      graceMs: 0,
      logLevel: "debug",
      serverUrl: "http://deckhand.internal:7420",
      id: "builder-3",
    });
    expect(await usageError([...base, "--lease-ms", "500"])).toMatch(
      /--lease-ms must be a whole number from 1000/,
    );
    expect(await usageError([...base, "--log-level", "loud"])).toMatch(/not a log level/);
    expect(await usageError(base, { [WireEnv.serverLogLevel]: "loud" })).toMatch(
      new RegExp(`${WireEnv.serverLogLevel} "loud" is not a log level`),
    );
    expect(await usageError([...base, "--server-url", "deckhand:7420"])).toMatch(
      /not an http:\/\/ or https:\/\/ URL/,
    );
    expect(await usageError([...base, "--id", "two words"])).toMatch(/--id must be/);
  });

  it("refuses unknown options and positionals", async () => {
    expect(await usageError(["--database-url", URL_A, "--listen", "x"])).toMatch(/--listen/);
    expect(await usageError(["--database-url", URL_A, "extra"])).toMatch(/extra/);
  });

  it("reads codeHosts and agentEnvironment from config.json, ignoring the server's own keys", async () => {
    const dataDir = scratchDirectory();
    writeFileSync(
      join(dataDir, "config.json"),
      JSON.stringify({
        listen: "0.0.0.0:7420",
        codeHosts: [{ type: "directory", path: "/srv/src" }],
        agentEnvironment: { deny: ["CORP_*"], allow: ["CORP_PROXY"] },
        modelUpstreams: {
          deckhand: { kind: "openai", baseUrl: "https://x", apiKeyEnv: "OPENAI_KEY" },
          opencode: {
            kind: "openai",
            baseUrl: "https://x",
            apiKeyEnv: "OPENAI_KEY",
            models: ["gpt-5-mini"],
          },
        },
        providersConfig: "agents/providers.json",
        agentStartTimeouts: { initializeSeconds: 120, providers: { qwen: { sessionSeconds: 30 } } },
        // A run whose budget is spent starts no more workspaces on an executor either, and its
        // rollout turns keep to the server's windows.
        modelBudgets: { run: { tokens: 2_000_000 } },
        modelPrices: { currency: "EUR", models: { "gpt-5*": { input: 1, output: 8 } } },
        batchChanges: { rolloutWindows: [{ rate: "10/hour", timezone: "Europe/Berlin" }] },
      }),
    );
    const parsed = await parseExecutorArguments(
      ["--database-url", URL_A, "--data-dir", dataDir],
      io(),
    );
    expect(parsed).not.toBe("help");
    expect(parsed === "help" ? null : parsed.config).toEqual({
      databaseUrl: null,
      codeHosts: [{ type: "directory", path: "/srv/src" }],
      agentEnvironment: { deny: ["CORP_*"], allow: ["CORP_PROXY"] },
      withheldEnv: ["OPENAI_KEY", "OPENAI_KEY"],
      codeHostConnections: [],
      changesetTrackingIntervalMs: 300_000,
      codingAgent: {},
      // What acp steps need to start the server's providers as its sessions do.
      providersConfigPath: join(dataDir, "agents", "providers.json"),
      agentStartTimeouts: { initializeMs: 120_000, providers: { qwen: { sessionMs: 30_000 } } },
      modelUpstreams: { deckhand: { models: [] }, opencode: { models: ["gpt-5-mini"] } },
      modelBudgets: { run: { tokens: 2_000_000 } },
      modelPrices: { currency: "EUR", models: { "gpt-5*": { input: 1, output: 8 } } },
      rolloutWindows: [{ rate: "10/hour", timezone: "Europe/Berlin" }],
      // Steps and hooks run in the server's sandbox, configured the same way.
      sandbox: { mode: "auto", allowHosts: [], stepNetwork: "full", hide: [], writable: [] },
      kubernetes: null,
    });
    // The cluster of `kubernetes` runs, and a located error for a bad one.
    writeFileSync(
      join(dataDir, "config.json"),
      JSON.stringify({
        kubernetes: { namespace: "steps", workVolume: { claimName: "data", mountPath: "/data" } },
      }),
    );
    const withCluster = await parseExecutorArguments(
      ["--database-url", URL_A, "--data-dir", dataDir],
      io(),
    );
    expect(withCluster === "help" ? null : withCluster.config.kubernetes).toEqual({
      namespace: "steps",
      workVolume: { claimName: "data", mountPath: "/data" },
    });
    writeFileSync(
      join(dataDir, "config.json"),
      JSON.stringify({
        kubernetes: {
          workVolume: { claimName: "data", mountPath: "/data" },
          resources: { limits: { memory: "lots" } },
        },
      }),
    );
    const badCluster = await parseExecutorArguments(
      ["--database-url", URL_A, "--data-dir", dataDir],
      io(),
    ).catch((caught: unknown) => caught);
    expect((badCluster as Error).message).toMatch(
      /config\.json: kubernetes\.resources\.limits\.memory: must be a Kubernetes quantity such as 500m/,
    );
    writeFileSync(join(dataDir, "config.json"), JSON.stringify({ codeHosts: [{ type: "svn" }] }));
    const error = await parseExecutorArguments(
      ["--database-url", URL_A, "--data-dir", dataDir],
      io(),
    ).catch((caught: unknown) => caught);
    expect(BatchesError.isInstance(error) && error.code).toBe("invalid_config");
    expect((error as Error).message).toMatch(/config\.json: codeHosts\.0/);
  });

  it("answers --help with the usage", async () => {
    expect(await parseExecutorArguments(["--help"], io())).toBe("help");
    expect(executorUsage).toMatch(/-j, --concurrency N/);
  });
});

describe("deckhand executor", () => {
  function capture(environment: NodeJS.ProcessEnv): ExecutorIo & { err: () => string } {
    let stderr = "";
    return {
      ...io(environment),
      stdout: process.stdout,
      stderr: {
        write: (text: string) => {
          stderr += text;
        },
      },
      err: () => stderr,
    };
  }

  it("exits 2 with one line saying what to do when neither a server nor PostgreSQL is given", async () => {
    const streams = capture({});
    expect(await runExecutorCommand([], streams)).toBe(2);
    expect(streams.err()).toMatch(
      /^deckhand executor: needs the server: pass --server-url URL with an executor token/,
    );
    expect(streams.err()).toMatch(/deckhand executor --help/);
  });

  it("exits 2 for a bad -j and 1 when the database cannot be reached", async () => {
    const bad = capture({});
    expect(await runExecutorCommand(["--database-url", URL_A, "-j", "0"], bad)).toBe(2);
    expect(bad.err()).toMatch(/-j must be a whole number/);
    const unreachable = capture({});
    unreachable.stdout = new (await import("node:stream")).PassThrough();
    expect(
      await runExecutorCommand(
        ["--database-url", "postgres://deckhand:s3cret-pw@127.0.0.1:1/deckhand", "-j", "1"],
        unreachable,
      ),
    ).toBe(1);
    expect(unreachable.err()).toMatch(/^deckhand executor: could not start/);
    expect(unreachable.err()).not.toContain("s3cret-pw");
  });

  it.runIf(testPostgresUrl)(
    "starts on PostgreSQL, says it is ready, reports its health (the queue lost and found again), and exits 0 on SIGTERM",
    async () => {
      const database = await createPostgresTestDatabase();
      cleanups.push(() => database.drop());
      const dataDir = scratchDirectory();
      const child = spawn(
        process.execPath,
        [
          "--conditions=source",
          cliEntry,
          "executor",
          "--data-dir",
          dataDir,
          "-j",
          "2",
          "--id",
          "exec-1",
        ],
        {
          cwd: cliRoot,
          env: { ...process.env, DATABASE_URL: database.url },
          stdio: ["ignore", "pipe", "pipe"],
        },
      );
      cleanups.push(() => {
        if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      });
      let output = "";
      child.stdout.on("data", (chunk: Buffer) => {
        output += chunk.toString("utf8");
      });
      child.stderr.on("data", (chunk: Buffer) => {
        output += chunk.toString("utf8");
      });
      const exited = once(child, "exit");
      const deadline = Date.now() + 30_000;
      while (!output.includes("deckhand executor ready")) {
        if (Date.now() > deadline || child.exitCode !== null) throw new Error(output);
        await new Promise((resolveWait) => setTimeout(resolveWait, 50));
      }
      const ready = output
        .split("\n")
        .filter((line) => line.includes("deckhand executor ready"))
        .map((line) => JSON.parse(line) as Record<string, unknown>)[0]!;
      expect(ready).toMatchObject({
        service: "deckhand-executor",
        executor: "exec-1",
        concurrency: 2,
      });
      expect(await checkExecutorHealth(dataDir)).toEqual({
        healthy: true,
        message: "executor exec-1 is healthy: 0 jobs running, queue reachable",
      });

      // The database refuses the executor: its polls fail, and the health file says so within
      // one interval; once it lets the executor in again, the next interval is healthy.
      const admin = await createDb({ databaseUrl: testPostgresUrl!, migrate: false, poolSize: 1 });
      cleanups.push(() => admin.close());
      const shut = async (allow: boolean) => {
        await admin.query(`alter database ${database.name} with allow_connections ${allow}`);
        if (!allow) {
          await admin.query(
            "select pg_terminate_backend(pid) from pg_stat_activity where datname = $1",
            [database.name],
          );
        }
      };
      cleanups.push(() => shut(true));
      const waitForHealth = async (healthy: boolean) => {
        const until = Date.now() + 30_000;
        for (;;) {
          const verdict = await checkExecutorHealth(dataDir);
          if (verdict.healthy === healthy) return verdict;
          if (Date.now() > until) throw new Error(`still ${JSON.stringify(verdict)}\n${output}`);
          await new Promise((resolveWait) => setTimeout(resolveWait, 200));
        }
      };
      await shut(false);
      const lost = await waitForHealth(false);
      expect(lost.message).toMatch(/^executor exec-1 cannot reach its queue: /);
      await shut(true);
      await waitForHealth(true);

      child.kill("SIGTERM");
      const [code] = await exited;
      expect(code).toBe(0);
      expect(output).toContain('"msg":"stopped"');
      // A stopped executor leaves no health file behind that would call it healthy.
      expect(existsSync(join(dataDir, EXECUTOR_HEALTH_FILE))).toBe(false);
    },
    120_000,
  );
});
