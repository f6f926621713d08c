import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { ContainerRuntime } from "@deckhand/container-runtime";
import { createDb, TaskRegistry, TaskWorker } from "@deckhand/db";
import { eventually } from "@deckhand/testkit";
import type { BatchRun } from "@deckhand/wire";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { repositoryAt, specFrom, temporaryDirectory, testEnvironment } from "../test/support.ts";
import { BatchRunService } from "./batch-run-service.ts";
import { checkoutWorkspace } from "./checkout-workspace.ts";
import { ContainerStepRunner } from "./container-step-runner.ts";
import { loadRepositories } from "./repositories.ts";
import { resolveWorkspaces } from "./resolve-workspaces.ts";
import { runWorkspace } from "./run-workspace.ts";
import { MemoryStepCache } from "./step-cache.ts";
import { type ImageLookups, StepPlacer } from "./step-placement.ts";
import type { PreparedStep } from "./step-runner.ts";

let scratch: ReturnType<typeof temporaryDirectory>;
beforeEach(() => {
  scratch = temporaryDirectory();
});
afterEach(() => scratch.remove());

/** The fake container CLI (fake-container-cli.cjs), logging each call to `log`. */
function fakeRuntime(log: string): ContainerRuntime {
  return {
    kind: "podman",
    binary: process.execPath,
    globalArgs: [fileURLToPath(new URL("./fake-container-cli.cjs", import.meta.url)), "--log", log],
    runArgs: [],
    version: "fake",
    rootless: false,
    restrictedHost: false,
  };
}

function calls(log: string): { command: string; args: string[] }[] {
  return readFileSync(log, "utf8")
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as { command: string; args: string[] });
}

describe("container steps", () => {
  it("start one engine process per step: a run looks its image up once, whatever its workspaces and steps", async () => {
    const root = join(scratch.path, "code");
    for (const name of ["api", "web"]) {
      repositoryAt(join(root, `github.com/acme/${name}`), { "README.md": `# ${name}\n` });
    }
    const spec = specFrom(`
name: boxed
on:
  - repositoriesMatchingQuery: repo:acme
steps:
  - run: echo one > one.txt
    container: busybox
  - run: echo two > two.txt
    container: busybox
changesetTemplate:
  title: Boxed
  branch: boxed
  commit:
    message: boxed
`);
    const log = join(scratch.path, "engine.log");
    const environment = testEnvironment(scratch.path, {
      outerEnvironment: { PATH: process.env.PATH },
      containerRuntime: fakeRuntime(log),
    });
    const repositories = await loadRepositories({ codeHosts: [{ type: "directory", path: root }] });
    const { workspaces } = await resolveWorkspaces(spec, { repositories });
    expect(workspaces).toHaveLength(2);
    // What the workspace job shares between the workspaces of one run.
    const images: ImageLookups = new Map();
    for (const [index, workspace] of workspaces.entries()) {
      const checkout = await checkoutWorkspace(workspace, join(scratch.path, `checkout-${index}`));
      const result = await runWorkspace({
        workspace,
        spec,
        checkout,
        environment,
        runtime: "container",
        cache: new MemoryStepCache(),
        images,
      });
      expect(result.error).toBeNull();
      expect(result.result!.files.map((file) => file.path)).toEqual(["one.txt", "two.txt"]);
      await checkout.remove();
    }
    const made = calls(log);
    expect(made.filter((call) => call.command === "image inspect")).toHaveLength(1);
    const runs = made.filter((call) => call.command === "run").map((call) => call.args.at(-1));
    // The image's bash probe once for the process, then each step's own run.
    expect(runs).toEqual([
      "exit 0",
      "echo one > one.txt",
      "echo two > two.txt",
      "echo one > one.txt",
      "echo two > two.txt",
    ]);
    expect(made).toHaveLength(6);
  });
});

const BOXED_SPEC = `
name: boxed
on:
  - repositoriesMatchingQuery: repo:acme
steps:
  - run: echo one > one.txt
    container: busybox
changesetTemplate:
  title: Boxed
  branch: boxed
  commit:
    message: boxed
`;

describe("container steps with files", () => {
  it("probe the image's shell once for workspaces whose files have the same content", async () => {
    const root = join(scratch.path, "code");
    for (const name of ["api", "web"]) {
      repositoryAt(join(root, `github.com/acme/${name}`), { "README.md": `# ${name}\n` });
    }
    const spec = specFrom(`
name: boxed
on:
  - repositoriesMatchingQuery: repo:acme
steps:
  - run: echo done > out.txt
    container: busybox
    files:
      /tmp/input.txt: the same for every workspace
changesetTemplate:
  title: Boxed
  branch: boxed
  commit:
    message: boxed
`);
    const log = join(scratch.path, "engine.log");
    const environment = testEnvironment(scratch.path, {
      outerEnvironment: { PATH: process.env.PATH },
      containerRuntime: fakeRuntime(log),
    });
    const repositories = await loadRepositories({ codeHosts: [{ type: "directory", path: root }] });
    const { workspaces } = await resolveWorkspaces(spec, { repositories });
    for (const [index, workspace] of workspaces.entries()) {
      const checkout = await checkoutWorkspace(workspace, join(scratch.path, `checkout-${index}`));
      const result = await runWorkspace({
        workspace,
        spec,
        checkout,
        environment,
        runtime: "container",
        cache: new MemoryStepCache(),
      });
      expect(result.error).toBeNull();
      await checkout.remove();
    }
    const runs = calls(log)
      .filter((call) => call.command === "run")
      .map((call) => call.args.at(-1));
    // Each step renders its files into a temporary file of its own: before, each was probed.
    expect(runs).toEqual(["exit 0", "echo done > out.txt", "echo done > out.txt"]);
  });
});

describe("container steps of a run", () => {
  it("look the image up once for the run's creation and all its jobs, and probe the shell as the run is created", async () => {
    const root = join(scratch.path, "code");
    for (const name of ["api", "web", "docs"]) {
      repositoryAt(join(root, `github.com/acme/${name}`), { "README.md": `# ${name}\n` });
    }
    const log = join(scratch.path, "engine.log");
    const database = await createDb({ dataDir: "memory://" });
    const service = new BatchRunService({
      database,
      codeHosts: () => [{ type: "directory", path: root }],
      environment: testEnvironment(scratch.path, {
        outerEnvironment: { PATH: process.env.PATH },
        containerRuntime: fakeRuntime(log),
      }),
    });
    const registry = new TaskRegistry();
    service.register(registry);
    const worker = new TaskWorker({ database, registry, concurrency: 2, pollIntervalMs: 50 });
    try {
      const created = await service.createRun({
        source: BOXED_SPEC,
        options: { runtime: "container" },
      });
      // No worker yet: only the run's creation can have started the probe.
      expect(
        await eventually(
          () => existsSync(log) && calls(log).some((call) => call.args.at(-1) === "exit 0"),
          60_000,
        ),
      ).toBe(true);
      void worker.start();
      let run: BatchRun = await service.getRun(created.id);
      expect(
        await eventually(() => {
          void service.getRun(created.id).then((found) => {
            run = found;
          });
          return run.status !== "queued" && run.status !== "running";
        }, 60_000),
      ).toBe(true);
      expect(run.status).toBe("completed");
      const made = calls(log);
      // Creating the run looked it up for each workspace's cache key, and each job again.
      expect(made.filter((call) => call.command === "image inspect")).toHaveLength(1);
      expect(made.filter((call) => call.command === "run").map((call) => call.args.at(-1))).toEqual(
        ["exit 0", "echo one > one.txt", "echo one > one.txt", "echo one > one.txt"],
      );
    } finally {
      await worker.stop();
      await database.close();
    }
  });

  it("pull an image the run's creation only looked for and did not find", async () => {
    const log = join(scratch.path, "engine.log");
    // What the run's creation (which pulls nothing) left when the image was not here.
    const images: ImageLookups = new Map([["busybox", Promise.resolve(null)]]);
    const placer = new StepPlacer({
      choice: "container",
      containerRuntime: fakeRuntime(log),
      path: process.env.PATH,
      pull: "missing",
      images,
    });
    const placement = await placer.place({ run: "true", container: "busybox" }, 0);
    expect(placement.problem).toBeNull();
    expect(placement.imageId).toBe("sha256:fake");
  });

  it("probe the shell again after a probe whose container could not start", async () => {
    const log = join(scratch.path, "engine.log");
    const shells = new Map<string, Promise<string>>();
    const step = {
      kind: "run",
      placement: { imageId: "sha256:fake" },
      files: [],
      mounts: [],
      signal: new AbortController().signal,
    } as unknown as Omit<PreparedStep, "shell">;
    const broken = { ...fakeRuntime(log), binary: join(scratch.path, "no-such-engine") };
    expect(await new ContainerStepRunner(broken, shells).shell(step)).toBe("/bin/sh");
    expect(await eventually(() => shells.size === 0, 60_000)).toBe(true);
    // The engine works again: the image's bash is found.
    expect(await new ContainerStepRunner(fakeRuntime(log), shells).shell(step)).toBe("/bin/bash");
  });
});

describe("the process's container runtime", () => {
  it("is detected again for a later run when no runtime was found, not for each job", async () => {
    const podman = join(scratch.path, "podman");
    const working = join(scratch.path, "podman-works");
    writeFileSync(
      podman,
      `#!/bin/sh\n[ -e ${working} ] || { echo 'cannot connect' >&2; exit 1; }\necho '4.9.0|false'\n`,
      { mode: 0o755 },
    );
    const environment = testEnvironment(scratch.path, {
      containerDetection: { candidates: ["podman"], binaries: { podman }, restrictedHost: true },
    });
    const spec = specFrom(BOXED_SPEC);
    const newRun = { detectAgainAfterNone: true };
    const first = await environment.containers(spec, "container", newRun).containerDetection;
    expect(first?.runtime).toBeNull();
    writeFileSync(working, "");
    // The run's jobs keep its answer: no detection per job.
    const job = environment.containers(spec, "container").containerDetection;
    expect((await job)?.runtime).toBeNull();
    const second = await environment.containers(spec, "container", newRun).containerDetection;
    expect(second?.runtime?.version).toBe("4.9.0");
    rmSync(working);
  });
});
