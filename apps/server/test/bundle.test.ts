import { execFileSync } from "node:child_process";
import { cpSync, mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  createPostgresTestDatabase,
  type SpawnedService,
  spawnService,
  testPostgresUrl,
} from "@deckhand/testkit";
import { ServerPath } from "@deckhand/wire";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DATABASE_URL_ENV } from "../src/config.ts";

const serverDirectory = fileURLToPath(new URL("..", import.meta.url));

describe("standalone server bundle", () => {
  let outside: string;
  const started: SpawnedService[] = [];
  const dropDatabases: (() => Promise<void>)[] = [];

  beforeAll(() => {
    // Build from the current sources, then run from a directory outside the repository, where
    // no node_modules can be found: only Node and the bundle's `dist/`.
    execFileSync(
      join(serverDirectory, "node_modules/.bin/tsup"),
      ["--config", "tsup.bundle.config.ts"],
      { cwd: serverDirectory, stdio: "pipe" },
    );
    outside = realpathSync(mkdtempSync(join(tmpdir(), "deckhand-server-bundle-")));
    cpSync(join(serverDirectory, "dist/server"), join(outside, "dist/server"), { recursive: true });
    cpSync(join(serverDirectory, "dist/migrations"), join(outside, "dist/migrations"), {
      recursive: true,
    });
  }, 120_000);

  afterAll(async () => {
    for (const service of started) {
      if (service.child.exitCode === null && service.child.signalCode === null) {
        service.child.kill("SIGKILL");
        await service.exited;
      }
    }
    for (const drop of dropDatabases) await drop();
    rmSync(outside, { recursive: true, force: true });
  });

  async function runBundle(args: string[], env: Record<string, string> = {}) {
    const service = await spawnService(
      process.execPath,
      [join(outside, "dist/server/deckhand-server.mjs"), "--listen", "127.0.0.1:0", ...args],
      {
        readyMessage: "deckhand server listening",
        cwd: outside,
        env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: outside, ...env },
        timeoutMs: 30_000,
      },
    );
    started.push(service);
    return service;
  }

  it("runs with the embedded database and a workspace agent, and stops cleanly on SIGTERM", async () => {
    const service = await runBundle(["--data-dir", join(outside, "data")]);
    const health = await fetch(`${service.url}${ServerPath.health}`);
    expect(health.status).toBe(200);
    expect(await health.json()).toMatchObject({
      status: "ok",
      database: { ok: true, kind: "pglite" },
      agent: { ok: true },
    });
    // The web UI ships beside the bundle (dist/server/web) and is served at /.
    const page = await fetch(`${service.url}/`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<div id="root">');
    service.child.kill("SIGTERM");
    expect(await service.exited).toEqual({ code: 0, signal: null });
  });

  it.runIf(testPostgresUrl)("runs against PostgreSQL with only a DATABASE_URL", async () => {
    // A database of its own: a server sharing one with other tests would claim their tasks.
    const database = await createPostgresTestDatabase();
    dropDatabases.push(() => database.drop());
    const service = await runBundle(["--no-agent", "--data-dir", join(outside, "pg-data")], {
      [DATABASE_URL_ENV]: database.url,
    });
    const health = await fetch(`${service.url}${ServerPath.health}`);
    expect(await health.json()).toMatchObject({
      status: "ok",
      database: { ok: true, kind: "postgres" },
      agent: null,
    });
    service.child.kill("SIGTERM");
    expect(await service.exited).toEqual({ code: 0, signal: null });
  });
});
