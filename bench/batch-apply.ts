// Measures applying changesets (`deckhand batch apply`'s git work, @deckhand/batches'
// applyChangeset): N changesets, each of its own repository, written as a branch and pushed to
// that repository's local bare origin, one after another, side by side in one run with a shell
// loop doing the same git work by hand (a temporary index, `git apply --cached`, `write-tree`,
// `commit-tree`, `update-ref`, `git push`). The ratio is what Deckhand's checks cost on top of
// the work itself: the branch name, the base, the remote's branch (a person's commits kept), the
// committer's identity, a checked-out branch, a push with a lease. Each changeset is applied
// once (a first apply: a new branch on the remote), then the same N again (unchanged: nothing
// to push), which is what re-applying a run costs.
//
//   node --conditions=source bench/batch-apply.ts
//   APPLY_BENCH_CHANGESETS=40 node --conditions=source bench/batch-apply.ts
import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { applyChangeset } from "@deckhand/batches";
import type { BatchChangeset } from "@deckhand/wire";
import { loadAverage, reportFigure } from "./support/figures.ts";

const CHANGESETS = Number(process.env.APPLY_BENCH_CHANGESETS ?? 20);
const round = (value: number, digits = 2) => Math.round(value * 10 ** digits) / 10 ** digits;

const identity = {
  GIT_AUTHOR_NAME: "Bench",
  GIT_AUTHOR_EMAIL: "bench@example.com",
  GIT_COMMITTER_NAME: "Bench",
  GIT_COMMITTER_EMAIL: "bench@example.com",
};

function git(cwd: string, ...args: string[]): string {
  return execFileSync("git", args, {
    cwd,
    encoding: "utf8",
    env: { ...process.env, ...identity },
  }).trim();
}

interface Placed {
  name: string;
  path: string;
  base: string;
  diff: string;
}

/** A working copy with one commit on main and a bare origin, and the diff a step would make. */
function placeRepository(root: string, name: string): Placed {
  const origin = join(root, "origins", `${name}.git`);
  const path = join(root, "code", name);
  mkdirSync(join(path, "src"), { recursive: true });
  writeFileSync(join(path, "README.md"), `# ${name}\n`);
  writeFileSync(join(path, "src", "app.txt"), "one\ntwo\nthree\n");
  git(path, "init", "--quiet", "--initial-branch=main");
  git(path, "add", "-A");
  git(path, "commit", "--quiet", "-m", "initial");
  git(root, "clone", "--quiet", "--bare", path, origin);
  git(path, "remote", "add", "origin", origin);
  git(path, "fetch", "--quiet", "origin");
  const base = git(path, "rev-parse", "HEAD");
  writeFileSync(join(path, "src", "app.txt"), "one\nTWO\nthree\n");
  writeFileSync(join(path, "HELLO.md"), "hello\n");
  git(path, "add", "-A");
  const diff = `${git(path, "diff", "--cached", "--binary", "--full-index", base)}\n`;
  git(path, "reset", "--quiet", "--hard", base);
  return { name, path, base, diff };
}

function changesetOf(placed: Placed, branch: string): BatchChangeset {
  return {
    repository: placed.name,
    base_branch: "main",
    base_revision: placed.base,
    path: "",
    branch,
    title: "Say hello",
    body: "",
    commit_message: "Say hello\n",
    commit_author: { name: "Bench", email: "bench@example.com" },
    published: false,
    diff: placed.diff,
    stats: { files: 2, insertions: 2, deletions: 1 },
  };
}

async function deckhand(placed: readonly Placed[], root: string, branch: string) {
  const started = performance.now();
  for (const repository of placed) {
    await applyChangeset({
      repository: {
        id: `directory:${repository.path}`,
        name: repository.name,
        host: { type: "directory", root: join(root, "code") },
        path: repository.path,
        url: undefined,
      },
      changeset: changesetOf(repository, branch),
      push: true,
    });
  }
  return (performance.now() - started) / 1000;
}

/** The same commits and pushes by hand: what the work costs without Deckhand's checks. */
function shellLoop(placed: readonly Placed[], root: string, branch: string): number {
  const script = `set -eu
for repository in "$@"; do
  cd "$repository"
  export GIT_INDEX_FILE="$(mktemp -d)/index"
  git read-tree "$(cat .bench-base)"
  git apply --cached --binary < .git/bench.diff
  tree=$(git write-tree)
  commit=$(echo "Say hello" | git commit-tree -p "$(cat .bench-base)" "$tree")
  git update-ref "refs/heads/${branch}" "$commit" ""
  git push --quiet origin "$commit:refs/heads/${branch}"
  rm -r "$(dirname "$GIT_INDEX_FILE")"
done`;
  for (const repository of placed) {
    writeFileSync(join(repository.path, ".git", "bench.diff"), repository.diff);
    writeFileSync(join(repository.path, ".bench-base"), repository.base);
  }
  const started = performance.now();
  const result = spawnSync("sh", ["-c", script, "sh", ...placed.map((each) => each.path)], {
    cwd: root,
    env: { ...process.env, ...identity },
    stdio: ["ignore", "inherit", "inherit"],
  });
  if (result.status !== 0) throw new Error(`the shell loop failed with ${result.status}`);
  return (performance.now() - started) / 1000;
}

const root = mkdtempSync(join(tmpdir(), "deckhand-bench-apply-"));
try {
  const load = loadAverage();
  const placed = Array.from({ length: CHANGESETS }, (_, index) =>
    placeRepository(root, `repo-${String(index).padStart(3, "0")}`),
  );
  // Warm-up: the module graph and git's first runs are not what is measured.
  await deckhand(placed.slice(0, 1), root, "bench/warm-up");
  const shell = shellLoop(placed, root, "bench/shell");
  const first = await deckhand(placed, root, "bench/deckhand");
  const again = await deckhand(placed, root, "bench/deckhand");
  const perChangeset = (seconds: number) => round((seconds * 1000) / CHANGESETS, 1);
  console.log(
    `${CHANGESETS} changesets, load average ${load}: shell ${round(shell)} s (${perChangeset(shell)} ms each), Deckhand first apply ${round(first)} s (${perChangeset(first)} ms each), unchanged re-apply ${round(again)} s (${perChangeset(again)} ms each)`,
  );
  reportFigure({
    id: "apply-vs-shell",
    label: `${CHANGESETS} changesets applied and pushed, one after another`,
    value: first,
    unit: "s",
    anchor: { label: "a shell loop of commit-tree + push", value: shell, unit: "s" },
    comparison: { value: first / shell, unit: "×" },
    note: `${perChangeset(first)} ms a changeset; load ${load}`,
  });
  reportFigure({
    id: "apply-unchanged-vs-shell",
    label: `the same ${CHANGESETS} applied again, unchanged (nothing to push)`,
    value: again,
    unit: "s",
    anchor: { label: "the shell loop", value: shell, unit: "s" },
    comparison: { value: again / shell, unit: "×" },
    note: `${perChangeset(again)} ms a changeset`,
  });
} finally {
  rmSync(root, { recursive: true, force: true });
}
