import { execFileSync, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { ContainerRuntime } from "@deckhand/container-runtime";
import { containerTestSetup } from "@deckhand/container-runtime/test-support";
import type { BatchRunEvent } from "@deckhand/wire";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { repositoryAt, specFrom, temporaryDirectory, testEnvironment } from "../test/support.ts";
import { checkoutWorkspace } from "./checkout-workspace.ts";
import { loadRepositories } from "./repositories.ts";
import { resolveWorkspaces } from "./resolve-workspaces.ts";
import { runWorkspace } from "./run-workspace.ts";
import { MemoryStepCache } from "./step-cache.ts";

const setup = await containerTestSetup();
// Only read inside tests that are skipped when there is no runtime.
const runtime = setup.runtime as ContainerRuntime;

let scratch: ReturnType<typeof temporaryDirectory>;
beforeEach(() => {
  scratch = temporaryDirectory();
});
afterEach(() => scratch.remove());

describe.skipIf(setup.runtime === null)("runWorkspace with the container runtime", () => {
  it("runs a step in its image with the workspace mounted: files it creates are in the diff", async () => {
    const root = join(scratch.path, "code");
    repositoryAt(join(root, "github.com/acme/api"), { "README.md": "# api\n" });
    const yaml = `
name: boxed
on:
  - repository: github.com/acme/api
steps:
  - run: |
      echo "in $(pwd) as \${{ repository.name }}" > made.txt
      cat /tmp/deckhand-input.txt > copied.txt
      echo "$GREETING" >> made.txt
      echo "shell $0"
      gitdir=$(sed -n 's/^gitdir: //p' /work/.git)
      test -f "$gitdir/HEAD" && echo "repository readable" >&2
      touch "$gitdir/written" 2>/dev/null || echo "repository read-only" >&2
    container: ${setup.image}
    env:
      GREETING: hello from the container
    files:
      /tmp/deckhand-input.txt: "mounted \${{ batch_change.name }}"
changesetTemplate:
  title: Boxed
  branch: boxed
  commit:
    message: boxed
`;
    const spec = specFrom(yaml);
    const repositories = await loadRepositories({ codeHosts: [{ type: "directory", path: root }] });
    const [workspace] = (await resolveWorkspaces(spec, { repositories })).workspaces;
    const checkout = await checkoutWorkspace(workspace!, join(scratch.path, "checkout"));
    const events: BatchRunEvent[] = [];
    const result = await runWorkspace({
      workspace: workspace!,
      spec,
      checkout,
      runtime: "container",
      environment: testEnvironment(scratch.path, { containerRuntime: runtime }),
      cache: new MemoryStepCache(),
      onEvent: (event) => events.push(event),
    });
    expect(result.error).toBeNull();
    expect(result.status).toBe("completed");
    expect(result.steps[0]).toMatchObject({ outcome: "run", runtime: "container", exitCode: 0 });
    expect(result.result!.files.map((file) => [file.status, file.path])).toEqual([
      ["added", "copied.txt"],
      ["added", "made.txt"],
    ]);
    expect(result.result!.diff).toContain("+in /work as github.com/acme/api");
    expect(result.result!.diff).toContain("+hello from the container");
    expect(result.result!.diff).toContain("+mounted boxed");
    expect(events).toContainEqual(
      expect.objectContaining({ type: "step_started", runtime: "container", image: setup.image }),
    );
    // The busybox image has no bash, so the script ran in its /bin/sh.
    expect(result.steps[0]!.stdout).toBe("shell /bin/sh\n");
    // The worktree's .git points into the repository, mounted read-only at the same path.
    expect(result.steps[0]!.stderr).toBe("repository readable\nrepository read-only\n");
    // The file was mounted into the container, never placed on the host.
    expect(existsSync("/tmp/deckhand-input.txt")).toBe(false);
  });

  it("runs the script with /bin/bash when the image has one, as src-cli does", async () => {
    const root = join(scratch.path, "code");
    repositoryAt(join(root, "github.com/acme/api"), { "README.md": "# api\n" });
    // A stand-in bash, mounted from the spec's directory: it says it ran, then hands over to sh.
    const fakeBash = join(scratch.path, "bash");
    writeFileSync(fakeBash, '#!/bin/sh\necho "via bash" >&2\nexec /bin/sh "$@"\n', { mode: 0o755 });
    const yaml = `
name: bashed
on:
  - repository: github.com/acme/api
steps:
  - run: echo ran > ran.txt
    container: ${setup.image}
    mount:
      - path: bash
        mountpoint: /bin/bash
changesetTemplate:
  title: Bashed
  branch: bashed
  commit:
    message: bashed
`;
    const spec = specFrom(yaml);
    const repositories = await loadRepositories({ codeHosts: [{ type: "directory", path: root }] });
    const [workspace] = (await resolveWorkspaces(spec, { repositories })).workspaces;
    const checkout = await checkoutWorkspace(workspace!, join(scratch.path, "checkout"));
    const result = await runWorkspace({
      workspace: workspace!,
      spec,
      checkout,
      specDirectory: scratch.path,
      runtime: "container",
      environment: testEnvironment(scratch.path, { containerRuntime: runtime }),
      cache: new MemoryStepCache(),
    });
    expect(result.error).toBeNull();
    expect(result.steps[0]!.stderr).toBe("via bash\n");
    expect(result.result!.files.map((file) => file.path)).toEqual(["ran.txt"]);
  });

  it("runs a codingAgent step's rendered script in the image, which names what the image lacks", async () => {
    const root = join(scratch.path, "code");
    repositoryAt(join(root, "github.com/acme/api"), { "README.md": "# api\n" });
    const yaml = `
version: 3
name: agent
on:
  - repository: github.com/acme/api
steps:
  - codingAgent:
      type: codex
      prompt: Say hello
    image: ${setup.image}
changesetTemplate:
  title: Agent
  branch: agent
  commit:
    message: agent
`;
    const spec = specFrom(yaml);
    const repositories = await loadRepositories({ codeHosts: [{ type: "directory", path: root }] });
    const [workspace] = (await resolveWorkspaces(spec, { repositories })).workspaces;
    const checkout = await checkoutWorkspace(workspace!, join(scratch.path, "checkout"));
    let released = 0;
    const result = await runWorkspace({
      workspace: workspace!,
      spec,
      checkout,
      runtime: "container",
      environment: testEnvironment(scratch.path, {
        containerRuntime: runtime,
        modelProvider: {
          lease: async () => ({
            baseUrl: "http://127.0.0.1:9/model-provider",
            token: "busybox-test-token-0123456789",
            release: async () => {
              released += 1;
            },
          }),
        },
        codingAgent: {
          versions: { codex: "0.0.1" },
          models: { codex: "gpt-5.3-codex" },
          install_source: { kind: "release", base_url: "http://127.0.0.1:9/releases" },
        },
      }),
      cache: new MemoryStepCache(),
      jobId: "job-busybox",
    });
    // busybox has no curl: the script's first check fails the step, naming it and the image.
    expect(result.status).toBe("failed");
    expect(result.error).toContain("curl");
    expect(result.error).toContain(`not found in image ${setup.image}`);
    expect(result.steps[0]).toMatchObject({ runtime: "container", exitCode: 1 });
    expect(released).toBe(1);
  });

  it("keys the step cache by where a step ran: a local result is not reused in a container, nor one of another image with the same name", async () => {
    const root = join(scratch.path, "code");
    repositoryAt(join(root, "github.com/acme/api"), { "README.md": "# api\n" });
    // A tag of this test's own (engineers and CI jobs share the machine's images), moved to a
    // rebuilt image half way.
    const tag = `localhost/deckhand-test/cache-key-${randomBytes(4).toString("hex")}:latest`;
    const podman = (...args: string[]) =>
      execFileSync(runtime.binary, [...runtime.globalArgs, ...args], { encoding: "utf8" }).trim();
    podman("tag", setup.image, tag);
    try {
      const spec = specFrom(`
name: where
on:
  - repository: github.com/acme/api
steps:
  - run: echo "$0" > where.txt
    container: ${tag}
changesetTemplate:
  title: Where
  branch: where
  commit:
    message: where
`);
      const repositories = await loadRepositories({
        codeHosts: [{ type: "directory", path: root }],
      });
      const [workspace] = (await resolveWorkspaces(spec, { repositories })).workspaces;
      const cache = new MemoryStepCache();
      let runs = 0;
      const runWith = async (choice: "local" | "container") => {
        runs += 1;
        const checkout = await checkoutWorkspace(
          workspace!,
          join(scratch.path, `checkout-${runs}`),
        );
        const result = await runWorkspace({
          workspace: workspace!,
          spec,
          checkout,
          runtime: choice,
          environment: testEnvironment(scratch.path, {
            containerRuntime: runtime,
            outerEnvironment: { PATH: process.env.PATH },
          }),
          cache,
        });
        expect(result.error).toBeNull();
        return { outcome: result.steps[0]!.outcome, diff: result.result!.diff };
      };
      const local = await runWith("local");
      expect(local.outcome).toBe("run");
      expect(local.diff).toMatch(/\+\/.*bash\n/);
      // The local result is not the container's: the step runs in the image.
      const boxed = await runWith("container");
      expect(boxed).toMatchObject({ outcome: "run" });
      expect(boxed.diff).toContain("+/bin/sh\n");
      expect((await runWith("container")).outcome).toBe("cached");
      expect((await runWith("local")).outcome).toBe("cached");
      // The same name on a rebuilt image is another image: its id is in the key.
      const container = podman("create", setup.image, "true");
      podman("commit", "--quiet", "--change", "LABEL deckhand.test=rebuilt", container, tag);
      podman("rm", container);
      expect((await runWith("container")).outcome).toBe("run");
    } finally {
      spawnSync(runtime.binary, [...runtime.globalArgs, "rmi", "--force", tag], {
        stdio: "ignore",
      });
    }
  }, 180_000);
});
