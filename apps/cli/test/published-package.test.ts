import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { type SpawnedService, spawnService } from "@deckhand/testkit";
import { ServerPath } from "@deckhand/wire";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import packageJson from "../package.json" with { type: "json" };

const cliDirectory = fileURLToPath(new URL("..", import.meta.url));

describe("the published deckhand package", () => {
  let outside: string;
  let deckhand: string;
  let environment: NodeJS.ProcessEnv;
  const started: SpawnedService[] = [];

  beforeAll(() => {
    // Build from the current sources, pack the tarball `npm publish` would upload, and install
    // it globally into a prefix outside the repository, as a user would. `--offline` holds
    // because the bundle declares no dependencies: nothing is fetched, nothing found in the
    // checkout's node_modules.
    execFileSync(join(cliDirectory, "node_modules/.bin/tsup"), [], {
      cwd: cliDirectory,
      stdio: "pipe",
    });
    outside = realpathSync(mkdtempSync(join(tmpdir(), "deckhand-cli-package-")));
    execFileSync("pnpm", ["pack", "--pack-destination", outside], {
      cwd: cliDirectory,
      stdio: "pipe",
    });
    const tarball = readdirSync(outside).find((name) => name.endsWith(".tgz"));
    if (tarball === undefined) throw new Error(`pnpm pack left no tarball in ${outside}`);
    environment = {
      // The bin's `#!/usr/bin/env node` must find this Node (>= 22.18), not an older one.
      PATH: [dirname(process.execPath), process.env.PATH ?? "/usr/bin:/bin"].join(delimiter),
      HOME: outside,
      npm_config_cache: join(outside, "npm-cache"),
    };
    const prefix = join(outside, "prefix");
    execFileSync(
      "npm",
      [
        "install",
        "--global",
        "--prefix",
        prefix,
        "--offline",
        "--no-audit",
        "--no-fund",
        join(outside, tarball),
      ],
      { cwd: outside, env: environment, stdio: "pipe" },
    );
    deckhand = join(prefix, "bin/deckhand");
  }, 120_000);

  afterAll(async () => {
    for (const service of started) {
      if (service.child.exitCode === null && service.child.signalCode === null) {
        service.child.kill("SIGKILL");
        await service.exited;
      }
    }
    rmSync(outside, { recursive: true, force: true });
  });

  it("declares no runtime dependencies, so installing it fetches nothing", () => {
    expect(packageJson).not.toHaveProperty("dependencies");
    expect(packageJson).not.toHaveProperty("private");
  });

  it("prints its version from the installed bin", () => {
    const output = execFileSync(deckhand, ["version"], { cwd: outside, env: environment });
    expect(output.toString("utf8")).toBe(`${packageJson.version}\n`);
  });

  it("answers `version` without starting Node's ES module loader; other commands start it", () => {
    // The loader's start costs a short command a few milliseconds; every other command needs it.
    const loaded = (command: string) =>
      spawnSync(
        process.execPath,
        [
          "--require",
          join(cliDirectory, "test/fixtures/report-module-loader.cjs"),
          realpathSync(deckhand),
          command,
        ],
        { cwd: outside, env: environment, encoding: "utf8" },
      ).stderr;
    expect(loaded("version")).toContain("esm loader: no");
    expect(loaded("help")).toContain("esm loader: yes");
  });

  it("validates a batch spec from the installed bin", () => {
    const spec = join(cliDirectory, "test/fixtures/batch/valid.yaml");
    const output = execFileSync(deckhand, ["batch", "validate", spec], {
      cwd: outside,
      env: environment,
    });
    expect(output.toString("utf8")).toContain(": OK (version 3");
  });

  it("runs `up` on the embedded database, with its migrations, and stops cleanly on SIGTERM", async () => {
    const service = await spawnService(
      deckhand,
      ["up", "--data-dir", join(outside, "data"), "--listen", "127.0.0.1:0"],
      {
        readyMessage: "deckhand server listening",
        cwd: outside,
        env: environment,
        timeoutMs: 30_000,
      },
    );
    started.push(service);
    const health = await fetch(`${service.url}${ServerPath.health}`);
    expect(health.status).toBe(200);
    expect(await health.json()).toMatchObject({
      status: "ok",
      database: { ok: true, kind: "pglite" },
      agent: { ok: true },
    });
    service.child.kill("SIGTERM");
    expect(await service.exited).toEqual({ code: 0, signal: null });
  });
});
