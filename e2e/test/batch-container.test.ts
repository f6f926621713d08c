// Issue #13, "a container step runs in Podman": `deckhand up` as its own process, repositories on
// a directory code host, and a batch run with `runtime: container` whose steps name the offline
// busybox image. Everything is observed through the HTTP API and the run stream, except what
// only the disk can say: who owns the files a container wrote into a kept checkout.
import { lstatSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { containerTestSetup } from "@deckhand/container-runtime/test-support";
import { gitIn } from "@deckhand/testkit";
import {
  type BatchStepDetail,
  type BatchWorkspace,
  ServerPath,
  type StoredBatchChangeset,
  serverPath,
} from "@deckhand/wire";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type BatchServer,
  databaseBackends,
  generateRepositories,
  startBatchServer,
} from "./batch-server.ts";

// Podman with runc, cgroupfs and fixed ulimits, and the busybox image built offline from the
// machine's busybox-static (`sudo bash scripts/container-runtime.sh` installs both). Without
// Podman the suite is skipped with that reason, except in CI, where it fails.
const setup = await containerTestSetup();

const REPOSITORIES = ["github.com/acme/api", "github.com/acme/web"];
const owner = { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 };

const spec = (image: string) => `
name: boxed
description: Files written from a busybox container
on:
${REPOSITORIES.map((name) => `  - repository: ${name}`).join("\n")}
steps:
  - run: |
      mkdir -p generated/nested
      echo "hello \${{ repository.name }}" > generated/nested/hello.txt
      test -f /run/.containerenv && echo "in a podman container"
      test -d /usr || echo "no /usr: the busybox image"
      echo "as $(id -u):$(id -g)"
    container: ${image}
  - run: |
      cat generated/nested/hello.txt > generated/copy.txt
      echo "second step" >> generated/nested/hello.txt
    container: ${image}
changesetTemplate:
  title: Boxed \${{ repository.name }}
  body: Written in a container
  branch: boxed
  commit:
    message: Boxed
`;

describe.skipIf(setup.runtime === null)("a container step runs in Podman", () => {
  let code: string;
  let deckhand: BatchServer;

  beforeAll(async () => {
    code = generateRepositories(REPOSITORIES);
    deckhand = await startBatchServer({
      // The database the other e2e suites use: PostgreSQL when DATABASE_URL is set, else PGlite.
      backend: databaseBackends.at(-1)!,
      config: {
        workspaceAgent: false,
        codeHosts: [{ type: "directory", path: code }],
        batchConcurrency: 2,
        // Podman here needs runc, cgroupfs and fixed ulimits (no containers.conf is written).
        containerRuntime: { restrictedHost: true },
      },
    });
  });

  afterAll(async () => {
    await deckhand?.close();
    if (code) rmSync(code, { recursive: true, force: true });
  });

  it("runs each step in the image, puts what it wrote in the changeset, owned by the host user", async () => {
    const { run, events } = await deckhand.runToEnd(
      {
        source: spec(setup.image),
        file: "boxed.yaml",
        // keep_logs leaves the checkouts on disk, to see who owns what the container wrote.
        options: { runtime: "container", keep_logs: true },
      },
      100_000,
    );
    expect(run.error).toBeNull();
    expect(run.status).toBe("completed");
    expect(run.stats).toMatchObject({
      workspaces: 2,
      completed: 2,
      failed: 0,
      changesets: 2,
      steps_run: 4,
      steps_cached: 0,
    });
    expect(events.at(-1)).toMatchObject({
      type: "run_finished",
      status: "completed",
      summary: { workspaces: 2, changesets: 2, steps_run: 4, failed: 0 },
    });
    // Every step started in the container, in the image; none fell back to sh.
    const startedSteps = events.filter((event) => event.type === "step_started");
    expect(startedSteps).toHaveLength(4);
    for (const event of startedSteps) {
      expect(event).toMatchObject({ runtime: "container", image: setup.image });
    }
    expect(events.some((event) => event.type === "step_runtime_fallback")).toBe(false);
    expect(
      events.filter((event) => event.type === "step_finished").map((event) => event.outcome),
    ).toEqual(["run", "run", "run", "run"]);

    const workspaces = (
      await deckhand.api<{ workspaces: BatchWorkspace[] }>(
        "GET",
        serverPath(ServerPath.batchRunWorkspaces, { batch_run_id: run.id }),
      )
    ).body.workspaces;
    expect(workspaces.map((workspace) => [workspace.repository, workspace.state])).toEqual([
      ["github.com/acme/api", "completed"],
      ["github.com/acme/web", "completed"],
    ]);
    for (const workspace of workspaces) {
      expect(workspace.steps).toMatchObject([
        { step_index: 0, outcome: "run", runtime: "container", image: setup.image, exit_code: 0 },
        { step_index: 1, outcome: "run", runtime: "container", image: setup.image, exit_code: 0 },
      ]);
      const detail = (
        await deckhand.api<BatchStepDetail>(
          "GET",
          serverPath(ServerPath.batchWorkspaceStep, {
            workspace_id: workspace.id,
            step_index: "0",
          }),
        )
      ).body;
      expect(detail.step).toMatchObject({ runtime: "container", image: setup.image });
      // Podman's marker file and the image's missing /usr: the script ran in the container,
      // as the host user (rootful Podman shares uids; rootless maps it with keep-id).
      expect(detail.stdout).toBe(
        `in a podman container\nno /usr: the busybox image\nas ${owner.uid}:${owner.gid}\n`,
      );
      expect(detail.diff).toContain(`+hello ${workspace.repository}`);
    }

    const changesets = (
      await deckhand.api<{ changesets: StoredBatchChangeset[] }>(
        "GET",
        serverPath(ServerPath.batchRunChangesets, { batch_run_id: run.id }),
      )
    ).body.changesets;
    expect(changesets.map((changeset) => [changeset.repository, changeset.title])).toEqual([
      ["github.com/acme/api", "Boxed github.com/acme/api"],
      ["github.com/acme/web", "Boxed github.com/acme/web"],
    ]);
    for (const changeset of changesets) {
      expect(changeset.stats).toEqual({ files: 2, insertions: 3, deletions: 0 });
      expect(changeset.diff).toContain("+++ b/generated/nested/hello.txt");
      expect(changeset.diff).toContain("+++ b/generated/copy.txt");
      expect(changeset.diff).toContain(`+hello ${changeset.repository}\n+second step`);
    }

    // The kept checkouts: every file and directory the containers made belongs to the host
    // user, so the git work that follows a step (staging, diffing, removing the worktree) and a
    // person taking the workspace over can change them.
    for (const workspace of workspaces) {
      // Each attempt checks out into <workspace id>.<attempt>.
      const checkout = join(
        deckhand.dataDir,
        "workspaces",
        "batches",
        `${workspace.id}.${workspace.attempts}`,
      );
      const made = readdirSync(join(checkout, "generated"), { recursive: true }).map((entry) =>
        join(checkout, "generated", String(entry)),
      );
      expect(made.map((path) => path.slice(checkout.length + 1)).sort()).toEqual([
        "generated/copy.txt",
        "generated/nested",
        "generated/nested/hello.txt",
      ]);
      for (const path of [join(checkout, "generated"), ...made]) {
        const { uid, gid } = lstatSync(path);
        expect({ path, uid, gid }).toEqual({ path, ...owner });
      }
      expect(gitIn(checkout, "status", "--porcelain")).toBe(
        "A  generated/copy.txt\nA  generated/nested/hello.txt",
      );
      const repository = join(code, workspace.repository);
      gitIn(repository, "worktree", "remove", "--force", checkout);
      expect(gitIn(repository, "worktree", "list", "--porcelain")).not.toContain(workspace.id);
    }
  }, 120_000);
});
