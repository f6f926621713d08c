// Issue #25, "images: the apps deployed independently": Deckhand's images built with Podman from
// the offline base (deploy/images/build-base.sh, then deploy/images/build.sh), and the services of
// deploy/images/compose.yaml run from them: the server on PostgreSQL and two executors that claim
// the batch jobs. A run over ten repositories completes although the server container restarts in
// the middle of it. The workspace agent's image is started too, and each image's health check run.
//
// Building the base takes minutes (debootstrap from the Debian mirror, Node.js from the npm
// registry), so the suite runs only with DECKHAND_TEST_IMAGES=1; `.ci/run` sets it in a step of its
// own. The base is cached in Podman's storage under a tag naming its content, so later runs on the
// same machine build only the app images (seconds).
import { execFile } from "node:child_process";
import {
  chmodSync,
  chownSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { containerTestSetup } from "@deckhand/container-runtime/test-support";
import {
  createPostgresTestDatabase,
  createTempRepository,
  type PostgresTestDatabase,
  testPostgresUrl,
} from "@deckhand/testkit";
import {
  type BatchRun,
  type BatchWorkspace,
  ServerPath,
  type StoredBatchChangeset,
  serverPath,
  WireEnv,
} from "@deckhand/wire";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { repositoryRoot } from "./deckhand-up.ts";
import { waitFor as waitForCondition } from "./wait-for.ts";

const run = promisify(execFile);
const ENABLE_ENV = "DECKHAND_TEST_IMAGES";
const REPOSITORIES = 10;
/** The uid:gid the images run as (deploy/images/build-base.sh). */
const IMAGE_USER = 1000;
const ADMIN_TOKEN = "e2e-admin-token-0123456789abcdef";

const enabled = process.env[ENABLE_ENV] === "1";
const setup = enabled ? await containerTestSetup() : null;
const skipReason = !enabled
  ? `set ${ENABLE_ENV}=1 to build the images (a few minutes the first time; .ci/run does, in its own step)`
  : setup?.runtime === null
    ? setup.skipReason
    : "";
if (skipReason !== "") console.warn(`skipping the image tests: ${skipReason}`);

interface ComposeService {
  image: string;
  command?: string[];
  environment?: Record<string, string>;
  security_opt?: string[];
}
const compose = parseYaml(
  readFileSync(join(repositoryRoot, "deploy/images/compose.yaml"), "utf8"),
  { merge: true },
) as { services: Record<string, ComposeService> };

/** Polls `check` (each poll may start a podman process, so not too often). */
function waitFor<T>(
  check: () => Promise<T | undefined | false> | T | undefined | false,
  what: string,
  timeoutMs = 120_000,
): Promise<T> {
  return waitForCondition(check, what, timeoutMs, 200);
}

/** A free loopback port (the server binds it right after; nothing else here takes ports). */
async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolveListen) => probe.listen(0, "127.0.0.1", resolveListen));
  const address = probe.address();
  await new Promise((resolveClose) => probe.close(resolveClose));
  if (address === null || typeof address === "string") throw new Error("no port");
  return address.port;
}

/** A directory the images' user owns (bind mounts keep the host's owners). */
function ownedDirectory(path: string): string {
  mkdirSync(path, { recursive: true });
  chownSync(path, IMAGE_USER, IMAGE_USER);
  return path;
}

function chownTree(path: string): Promise<unknown> {
  return run("chown", ["-R", `${IMAGE_USER}:${IMAGE_USER}`, path]);
}

describe.skipIf(skipReason !== "")(
  `Deckhand's images under Podman${skipReason === "" ? "" : ` (skipped: ${skipReason})`}`,
  () => {
    const runtime = setup?.runtime ?? null;
    const tag = `e2e-${process.pid}`;
    const names = {
      server: `deckhand-e2e-${process.pid}-server`,
      executors: [1, 2].map((index) => `deckhand-e2e-${process.pid}-executor-${index}`),
      agent: `deckhand-e2e-${process.pid}-agent`,
    };
    const images: Record<string, { reference: string; bytes: number }> = {};
    let scratch: string;
    let postgres: { url: string; dir: string } | null = null;
    let database: PostgresTestDatabase;
    let serverUrl: string;

    const podman = async (args: string[], timeoutMs = 120_000) => {
      const { stdout } = await run(runtime!.binary, [...runtime!.globalArgs, ...args], {
        timeout: timeoutMs,
        maxBuffer: 64 * 1024 * 1024,
      });
      return stdout.trim();
    };
    /** Whether the image's HEALTHCHECK passes in the container now (`podman healthcheck run`). */
    const healthy = (name: string) =>
      podman(["healthcheck", "run", name], 30_000).then(
        () => true,
        () => false,
      );
    const logs = (name: string) =>
      run(runtime!.binary, [...runtime!.globalArgs, "logs", name], { maxBuffer: 64 * 1024 * 1024 })
        .then(({ stdout, stderr }) => `${stdout}${stderr}`)
        .catch((error: Error) => `(no logs: ${error.message})`);

    async function api<Body>(method: string, path: string, body?: unknown): Promise<Body> {
      const response = await fetch(`${serverUrl}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${ADMIN_TOKEN}`,
          ...(body === undefined ? {} : { "content-type": "application/json" }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await response.text();
      if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text}`);
      return JSON.parse(text) as Body;
    }

    beforeAll(async () => {
      // The images hold the CLI bundle; turbo rebuilds it only when a source changed.
      let started = Date.now();
      await run(
        "sh",
        [
          "scripts/toolchain.sh",
          "pnpm",
          "exec",
          "turbo",
          "run",
          "build",
          "--filter",
          "@deckhand/cli...",
          "--output-logs=errors-only",
        ],
        { cwd: repositoryRoot, timeout: 900_000, maxBuffer: 64 * 1024 * 1024 },
      );
      const bundleSeconds = (Date.now() - started) / 1000;
      started = Date.now();
      const engine = [runtime!.binary, ...runtime!.globalArgs].join(" ");
      const built = await run("bash", ["deploy/images/build.sh", "--tag", tag], {
        cwd: repositoryRoot,
        env: { ...process.env, DECKHAND_CONTAINER_ENGINE: engine },
        timeout: 900_000,
        maxBuffer: 64 * 1024 * 1024,
      });
      for (const line of built.stdout.trim().split("\n")) {
        const [target, reference, bytes] = line.split(" ");
        images[target!] = { reference: reference!, bytes: Number(bytes) };
      }
      console.info(
        `images: bundle ${bundleSeconds.toFixed(0)} s, images ${((Date.now() - started) / 1000).toFixed(0)} s;`,
        Object.entries(images)
          .map(([target, image]) => `${target} ${(image.bytes / 1e6).toFixed(0)} MB`)
          .join(", "),
      );

      scratch = mkdtempSync(join(tmpdir(), "deckhand-e2e-images-"));
      chmodSync(scratch, 0o755);
      // The test's PostgreSQL: CI's (DATABASE_URL), else a throwaway one of its own.
      if (testPostgresUrl === undefined) {
        const { stdout } = await run("bash", ["scripts/ci-postgres.sh", "start"], {
          cwd: repositoryRoot,
          timeout: 300_000,
        });
        const value = (name: string) => stdout.match(new RegExp(`^${name}=(.*)$`, "m"))?.[1];
        postgres = { url: value("DATABASE_URL")!, dir: value("DECKHAND_CI_POSTGRES_DIR")! };
      }
      database = await createPostgresTestDatabase(postgres?.url ?? testPostgresUrl);
    }, 1_200_000);

    afterAll(async () => {
      if (runtime !== null) {
        // One at a time: a container that never started, or an image still in use, must not
        // keep the others.
        for (const name of [names.server, ...names.executors, names.agent]) {
          await podman(["rm", "--force", "--ignore", "--time", "5", name]).catch(() => {});
        }
        for (const image of Object.values(images)) {
          await podman(["rmi", image.reference]).catch(() => {});
        }
      }
      await database?.drop();
      if (postgres !== null) {
        await run("bash", ["scripts/ci-postgres.sh", "stop", postgres.dir], {
          cwd: repositoryRoot,
        });
      }
      if (scratch) rmSync(scratch, { recursive: true, force: true });
    }, 120_000);

    it("builds three images that run as a non-root user with a health check", async () => {
      expect(Object.keys(images).sort()).toEqual(["agent", "deckhand", "executor", "server"]);
      for (const target of ["server", "executor", "agent"]) {
        const [config] = JSON.parse(
          await podman(["image", "inspect", images[target]!.reference]),
        ) as [{ Config: { User: string }; Healthcheck?: { Test: string[]; Interval: number } }];
        expect(config.Config.User, target).toBe(`${IMAGE_USER}:${IMAGE_USER}`);
        expect(config.Healthcheck?.Test, target).toEqual(["CMD", "deckhand", "health", target]);
      }
      // The compose file names the images these targets build, and runs executors on the
      // database URL (full trust) until the executor API over HTTP replaces it.
      expect(Object.keys(compose.services).sort()).toEqual([
        "executor-1",
        "executor-2",
        "postgres",
        "server",
      ]);
      expect(compose.services.server!.image).toBe("localhost/deckhand/server:latest");
      for (const name of ["executor-1", "executor-2"]) {
        const service = compose.services[name]!;
        expect(service.image).toBe("localhost/deckhand/executor:latest");
        expect(service.command?.[0]).toBe("executor");
        expect(Object.keys(service.environment ?? {})).toContain("DATABASE_URL");
      }
    });

    it("runs the workspace agent's image, healthy behind its token", async () => {
      // Its own network namespace: the agent listens on 0.0.0.0:7421 there, and the health check
      // runs in the same namespace.
      await podman([
        "run",
        "--detach",
        "--name",
        names.agent,
        "--network",
        "none",
        ...runtime!.runArgs,
        "--env",
        `${WireEnv.agentToken}=e2e-agent-token-0123456789`,
        images.agent!.reference,
      ]);
      await waitFor(() => healthy(names.agent), "the agent to be healthy", 60_000).catch(
        async (error: Error) => {
          throw new Error(`${error.message}\n${await logs(names.agent)}`);
        },
      );
      expect(await podman(["exec", names.agent, "id", "-u"])).toBe(String(IMAGE_USER));
    });

    it("runs a batch over ten repositories on two executor containers, through a server restart", async () => {
      // Ten repositories on a directory code host, at the same path in every container (as a
      // shared file system would give machines), owned by the images' user.
      const code = join(scratch, "code");
      mkdirSync(join(code, "github.com/acme"), { recursive: true });
      for (let index = 0; index < REPOSITORIES; index += 1) {
        const repository = createTempRepository({ "README.md": `# repo-${index}\n` });
        await run("mv", [repository.path, join(code, `github.com/acme/repo-${index}`)]);
      }
      await chownTree(code);
      // Steps past the first two wait for this file, so the run cannot end before the restart.
      const gate = ownedDirectory(join(scratch, "gate"));
      const codeHosts = [{ type: "directory", path: code }];
      const port = await freePort();
      serverUrl = `http://127.0.0.1:${port}`;

      // The compose file's config files, with this test's code host: they ask for bubblewrap
      // (the start fails without it), so the steps below run sandboxed.
      const shippedConfig = (name: string): Record<string, unknown> =>
        JSON.parse(readFileSync(join(repositoryRoot, `deploy/images/config/${name}.json`), "utf8"));
      expect(shippedConfig("server")).toMatchObject({ sandbox: "bubblewrap", batchConcurrency: 0 });
      expect(shippedConfig("executor")).toMatchObject({ sandbox: "bubblewrap" });
      // What the compose file gives the containers for bubblewrap.
      const sandboxOptions = (service: ComposeService) =>
        (service.security_opt ?? []).flatMap((option) => ["--security-opt", option]);
      const volume = (name: string, config: Record<string, unknown>) => {
        const dir = ownedDirectory(join(scratch, name));
        writeFileSync(join(dir, "config.json"), JSON.stringify(config));
        return ["--volume", `${dir}:/data`];
      };
      // The compose file's services, on the host's network (the test's PostgreSQL and the
      // server are on loopback) instead of compose's bridge and its published port.
      const serverService = compose.services.server!;
      const serverArgs = [
        "run",
        "--detach",
        "--name",
        names.server,
        "--network",
        "host",
        ...runtime!.runArgs,
        ...sandboxOptions(serverService),
        ...volume("server", { ...shippedConfig("server"), codeHosts }),
        "--volume",
        `${code}:${code}`,
        "--env",
        `DATABASE_URL=${database.url}`,
        "--env",
        `${WireEnv.adminToken}=${ADMIN_TOKEN}`,
        "--env",
        `${WireEnv.serverListen}=127.0.0.1:${port}`,
        images.server!.reference,
        ...(serverService.command ?? []),
      ];
      await podman(serverArgs);
      const serverHealthy = async () => {
        await waitFor(() => healthy(names.server), "the server to be healthy").catch(
          async (error: Error) => {
            throw new Error(`${error.message}\n${await logs(names.server)}`);
          },
        );
      };
      await serverHealthy();
      expect(await podman(["exec", names.server, "id", "-u"])).toBe(String(IMAGE_USER));
      // The web UI is in the server's image.
      const page = await fetch(`${serverUrl}/`);
      expect(page.status).toBe(200);
      expect(await page.text()).toContain("<html");

      for (const [index, name] of names.executors.entries()) {
        const service = compose.services[`executor-${index + 1}`]!;
        const command = (service.command ?? []).map((argument) =>
          argument.startsWith("http://server:") ? serverUrl : argument,
        );
        await podman([
          "run",
          "--detach",
          "--name",
          name,
          "--network",
          "host",
          ...runtime!.runArgs,
          ...sandboxOptions(service),
          ...volume(`executor-${index + 1}`, { ...shippedConfig("executor"), codeHosts }),
          "--volume",
          `${code}:${code}`,
          "--volume",
          `${gate}:/gate:ro`,
          "--env",
          `DATABASE_URL=${database.url}`,
          images.executor!.reference,
          ...command,
        ]);
      }
      for (const name of names.executors) {
        await waitFor(
          async () => (await logs(name)).includes("deckhand executor ready"),
          `${name} to be ready`,
        );
        await waitFor(() => healthy(name), `${name} to be healthy`, 60_000);
      }

      const spec = `
name: images
on:
  - repositoriesMatchingQuery: repo:^github\\.com/acme/
steps:
  - run: |
      case "\${{ repository.name }}" in
        */repo-0|*/repo-1) ;;
        *) while [ ! -e /gate/open ]; do sleep 0.2; done ;;
      esac
      echo "\${{ repository.name }} from $(id -u), pid 1 $(cat /proc/1/comm)" > MARK
    # Required by the spec's schema; a local run runs the step in the executor's container.
    container: alpine:3
changesetTemplate:
  title: Mark \${{ repository.name }}
  body: Marked in an executor container
  branch: mark
  commit:
    message: mark
`;
      const created = await api<BatchRun>("POST", ServerPath.batchRuns, {
        source: spec,
        options: { runtime: "local" },
      });
      expect(created.stats.workspaces).toBe(REPOSITORIES);
      const current = () =>
        api<BatchRun>("GET", serverPath(ServerPath.batchRun, { batch_run_id: created.id }));
      // Two workspaces done, the executors' four slots waiting at the gate: the middle of the run.
      await waitFor(async () => {
        const state = await current();
        return state.stats.completed === 2 && state.status === "running";
      }, "two workspaces to complete");

      const startedBefore = await podman([
        "inspect",
        "--format",
        "{{.State.StartedAt}}",
        names.server,
      ]);
      await podman(["restart", "--time", "30", names.server]);
      expect(await podman(["inspect", "--format", "{{.State.StartedAt}}", names.server])).not.toBe(
        startedBefore,
      );
      await serverHealthy();
      const afterRestart = await current();
      expect(afterRestart.status).toBe("running");
      expect(afterRestart.stats.completed).toBe(2);

      writeFileSync(join(gate, "open"), "");
      const finished = await waitFor(async () => {
        const state = await current();
        return state.status === "queued" || state.status === "running" ? undefined : state;
      }, "the run to finish").catch(async (error: Error) => {
        const all = [names.server, ...names.executors];
        throw new Error(`${error.message}\n${(await Promise.all(all.map(logs))).join("\n")}`);
      });

      expect(finished.error).toBeNull();
      expect(finished.status).toBe("completed");
      expect(finished.stats).toMatchObject({
        workspaces: REPOSITORIES,
        completed: REPOSITORIES,
        failed: 0,
        changesets: REPOSITORIES,
      });
      const { workspaces } = await api<{ workspaces: BatchWorkspace[] }>(
        "GET",
        serverPath(ServerPath.batchRunWorkspaces, { batch_run_id: created.id }),
      );
      expect(workspaces).toHaveLength(REPOSITORIES);
      for (const workspace of workspaces) {
        expect(workspace.state, workspace.repository).toBe("completed");
        expect(["executor-1", "executor-2"]).toContain(workspace.executor);
      }
      const { changesets } = await api<{ changesets: StoredBatchChangeset[] }>(
        "GET",
        serverPath(ServerPath.batchRunChangesets, { batch_run_id: created.id }),
      );
      expect(changesets).toHaveLength(REPOSITORIES);
      for (const changeset of changesets) {
        // The step ran in the executor's container, as its user, in a bubblewrap sandbox (its own
        // PID namespace, where the container's tini is not pid 1).
        expect(changeset.diff).toContain(
          `+${changeset.repository} from ${IMAGE_USER}, pid 1 bwrap`,
        );
      }

      // SIGTERM through tini: each executor stops cleanly, removing its health file.
      for (const name of names.executors) {
        await podman(["stop", "--time", "30", name]);
        expect(await podman(["inspect", "--format", "{{.State.ExitCode}}", name]), name).toBe("0");
        expect(await logs(name)).toContain('"msg":"stopped"');
      }
    }, 600_000);
  },
);
