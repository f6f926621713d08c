import { type ChildProcess, spawn } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { rename } from "node:fs/promises";
import { join, relative } from "node:path";
import { installErrorHandling } from "@deckhand/http-kit";
import { type ErrorResponse, WirePath } from "@deckhand/wire";
import { Hono } from "hono";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type TemporaryTree, temporaryTree } from "../test/support.ts";
import { createFileRouter } from "./file-router.ts";
import { WorkspaceFiles } from "./workspace-files.ts";
import { WorkspaceFilesError } from "./workspace-files-error.ts";

/**
 * A real attacker: another process swapping `<root>/racedir` between a directory and a
 * symbolic link to the outside directory as fast as it can, while the file API works on
 * `racedir/...`. The outside directory holds files of the same names, so any request that
 * follows the swapped link reads or changes them.
 */
const SWAPPER = `
const { renameSync } = require("node:fs");
const [directory, parked, link] = process.argv.slice(1);
let strays = 0;
process.stdout.write("ready\\n");
for (;;) {
  try { renameSync(directory, parked); } catch {}
  try {
    renameSync(link, directory);
  } catch {
    // A write created the directory in the gap of the swap; move it aside (kept, so leftover
    // temporary files in it are still found) and swap on.
    try { renameSync(directory, directory + "-stray-" + ++strays); } catch {}
  }
  try { renameSync(directory, link); } catch {}
  try { renameSync(parked, directory); } catch {}
}
`;

const OUTSIDE_CONTENT = "outside secret token\n";
const INSIDE_CONTENT = "inside token\n";
/** Enough rounds to fail reliably without the descriptor checks (a read leaks in about a quarter). */
const ROUNDS = 600;
/** Requests in flight at once, so requests overlap each other as well as the swapper. */
const CONCURRENCY = 6;

let tree: TemporaryTree;
let files: WorkspaceFiles;
let swapper: ChildProcess | undefined;

beforeEach(() => {
  tree = temporaryTree();
  files = new WorkspaceFiles({ root: tree.root });
  tree.file("racedir/f.txt", INSIDE_CONTENT);
  tree.file("racedir/victim.txt", INSIDE_CONTENT);
  writeFileSync(join(tree.outside, "f.txt"), OUTSIDE_CONTENT);
  writeFileSync(join(tree.outside, "victim.txt"), OUTSIDE_CONTENT);
  mkdirSync(join(tree.outside, "deeper"));
  writeFileSync(join(tree.outside, "deeper", "g.txt"), OUTSIDE_CONTENT);
  tree.link("racedir-link", tree.outside);
});

afterEach(async () => {
  await stopSwapper();
  tree.remove();
});

async function startSwapper(): Promise<void> {
  const child = spawn(
    process.execPath,
    [
      "-e",
      SWAPPER,
      join(tree.root, "racedir"),
      join(tree.root, "racedir-parked"),
      join(tree.root, "racedir-link"),
    ],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  swapper = child;
  await new Promise<void>((resolve, reject) => {
    child.once("error", reject);
    child.stdout!.once("data", () => resolve());
  });
}

async function stopSwapper(): Promise<void> {
  const child = swapper;
  swapper = undefined;
  if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGKILL");
  await exited;
}

/** Every file under `directory` (links not followed) with its content, keyed by relative path. */
function snapshot(directory: string): Record<string, string> {
  const entries: Record<string, string> = {};
  for (const entry of readdirSync(directory, { withFileTypes: true, recursive: true })) {
    const path = join(entry.parentPath, entry.name);
    const key = relative(directory, path);
    entries[key] = entry.isFile()
      ? readFileSync(path, "utf8")
      : entry.isDirectory()
        ? "<dir>"
        : "<other>";
  }
  return entries;
}

function leftoverTemporaries(): string[] {
  return readdirSync(tree.base, { recursive: true })
    .map(String)
    .filter((path) => path.includes(".deckhand-"));
}

/** What one request did: its answer, or the code (and HTTP status) it failed with. */
type Outcome = { ok: true; value: unknown } | { ok: false; code: string; status?: number };

type Operation = (round: number) => Promise<Outcome>;

/**
 * Runs `operation` ROUNDS times against the swapper, checks the answers with `expectAnswers`,
 * then that nothing outside changed and no temporary file was left anywhere.
 */
async function race(
  operation: Operation,
  expectAnswers: (outcomes: Outcome[]) => void,
): Promise<void> {
  const outside = snapshot(tree.outside);
  const outcomes: Outcome[] = [];
  await startSwapper();
  try {
    let next = 0;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < ROUNDS) {
          const round = next;
          next += 1;
          outcomes[round] = await operation(round);
        }
      }),
    );
  } finally {
    await stopSwapper();
  }
  // The swapper really got in the way: some requests met the link (or the gap in the swap).
  expect(outcomes.filter((outcome) => !outcome.ok).length).toBeGreaterThan(0);
  expectAnswers(outcomes);
  expect(snapshot(tree.outside)).toEqual(outside);
  expect(leftoverTemporaries()).toEqual([]);
}

/** The library's own rejections: every one a WorkspaceFilesError, none `internal`. */
async function library(work: () => Promise<unknown>): Promise<Outcome> {
  try {
    return { ok: true, value: await work() };
  } catch (error) {
    if (!(error instanceof WorkspaceFilesError)) throw error;
    return { ok: false, code: error.code };
  }
}

function router(): (route: string, body: unknown) => Promise<Outcome> {
  const app = new Hono();
  // Unexpected errors are answered 500, which the status check reports.
  installErrorHandling(app, { onUnexpectedError: () => {} });
  app.route(WirePath.files, createFileRouter(files));
  return async (route, body) => {
    const response = await app.request(`${WirePath.files}/${route}`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body),
    });
    const answer = (await response.json()) as unknown;
    if (response.ok) return { ok: true, value: answer };
    return { ok: false, code: (answer as ErrorResponse).error.code, status: response.status };
  };
}

function failureCodes(outcomes: Outcome[]): string[] {
  return [...new Set(outcomes.flatMap((outcome) => (outcome.ok ? [] : [outcome.code])))].sort();
}

/** Races answer the caller's fault or a retryable conflict, never an internal error. */
const CLIENT_CODES = ["conflict", "file_not_found", "not_a_file", "path_outside_root"];

function expectClientErrorsOnly(outcomes: Outcome[]): void {
  for (const code of failureCodes(outcomes)) expect(CLIENT_CODES).toContain(code);
  for (const outcome of outcomes) {
    if (!outcome.ok && outcome.status !== undefined) {
      expect(outcome.status).toBeGreaterThanOrEqual(400);
      expect(outcome.status).toBeLessThan(500);
    }
  }
}

function readContents(outcomes: Outcome[]): string[] {
  return outcomes.flatMap((outcome) =>
    outcome.ok ? [(outcome.value as { content: string }).content] : [],
  );
}

describe("file API under a process swapping a directory for a link to outside", () => {
  it("never reads outside content", { timeout: 20_000 }, async () => {
    await race(
      () => library(() => files.read({ path: "racedir/f.txt" })),
      (outcomes) => {
        expect(readContents(outcomes).filter((content) => content !== INSIDE_CONTENT)).toEqual([]);
        expectClientErrorsOnly(outcomes);
      },
    );
  });

  it("never writes outside or leaves a temporary file", { timeout: 20_000 }, async () => {
    await race(
      (round) =>
        library(() =>
          files.write({
            path: round % 2 === 0 ? "racedir/f.txt" : "racedir/deeper/g.txt",
            content: `written ${round}\n`,
          }),
        ),
      expectClientErrorsOnly,
    );
  });

  it("never edits an outside file", { timeout: 20_000 }, async () => {
    await race(
      () =>
        library(() =>
          files.edit({
            files: [{ path: "racedir/f.txt", edits: [{ search: "token", replace: "token+" }] }],
          }),
        ),
      expectClientErrorsOnly,
    );
  });

  it("never deletes an outside file", { timeout: 20_000 }, async () => {
    await race(
      () => library(() => files.delete({ path: "racedir/victim.txt" })),
      expectClientErrorsOnly,
    );
  });

  it("answers every race over HTTP with a 4xx, never a 500", { timeout: 20_000 }, async () => {
    const post = router();
    await race(
      (round) => {
        switch (round % 4) {
          case 0:
            return post("read", { path: "racedir/f.txt" });
          case 1:
            return post("write", { path: "racedir/f.txt", content: `written ${round} token\n` });
          case 2:
            return post("edit", {
              files: [{ path: "racedir/f.txt", edits: [{ search: "token", replace: "token+" }] }],
            });
          default:
            return post("delete", { path: "racedir/victim.txt" });
        }
      },
      (outcomes) => {
        expectClientErrorsOnly(outcomes);
        const reads = outcomes.filter((_, round) => round % 4 === 0);
        expect(readContents(reads).filter((content) => content.includes("outside"))).toEqual([]);
      },
    );
  });
});

/**
 * The rename is the last step of every write; a hook there changes the tree at exactly the
 * wrong moment, after every check, every time.
 */
describe("file API when the tree changes just before the final rename", () => {
  const parked = () => join(tree.root, "racedir-parked");

  /** Swaps `racedir` for a link to the outside directory, then renames as asked. */
  function swappingRename() {
    return async (from: string, to: string) => {
      renameSync(join(tree.root, "racedir"), parked());
      symlinkSync(tree.outside, join(tree.root, "racedir"));
      await rename(from, to);
    };
  }

  it("writes into the directory that was checked, not through a link swapped in on its path", async () => {
    const swapped = new WorkspaceFiles({ root: tree.root, renameFile: swappingRename() });
    const outside = snapshot(tree.outside);
    const answer = await swapped.write({ path: "racedir/f.txt", content: "new\n" });
    expect(answer.path).toBe(join(tree.root, "racedir", "f.txt"));
    expect(readFileSync(join(parked(), "f.txt"), "utf8")).toBe("new\n");
    expect(snapshot(tree.outside)).toEqual(outside);
    expect(leftoverTemporaries()).toEqual([]);
  });

  it("edits the file that was read, not one a swapped link leads to", async () => {
    const swapped = new WorkspaceFiles({ root: tree.root, renameFile: swappingRename() });
    const outside = snapshot(tree.outside);
    await swapped.edit({
      files: [{ path: "racedir/f.txt", edits: [{ search: "token", replace: "edited" }] }],
    });
    expect(readFileSync(join(parked(), "f.txt"), "utf8")).toBe("inside edited\n");
    expect(snapshot(tree.outside)).toEqual(outside);
    expect(leftoverTemporaries()).toEqual([]);
  });

  it("answers 409 conflict when the directory itself was moved out of the root before the rename", async () => {
    const moved = join(tree.outside, "moved");
    const moving = new WorkspaceFiles({
      root: tree.root,
      renameFile: async (from, to) => {
        renameSync(join(tree.root, "racedir"), moved);
        await rename(from, to);
      },
    });
    const failure = await moving.write({ path: "racedir/f.txt", content: "new\n" }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(WorkspaceFilesError);
    expect(failure).toMatchObject({ code: "conflict" });
    expect((failure as Error).message).toContain(`its directory is now ${moved}`);
    // What the conflict reports: the rename followed the directory, nothing else was touched.
    expect(readFileSync(join(moved, "f.txt"), "utf8")).toBe("new\n");
    expect(readFileSync(join(tree.outside, "f.txt"), "utf8")).toBe(OUTSIDE_CONTENT);
    expect(leftoverTemporaries()).toEqual([]);
  });
});

describe("edit when a directory leaves the root between two renames", () => {
  it("refuses the second file with path_outside_root and restores the first", async () => {
    const first = tree.file("a.txt", "first token\n");
    const moved = join(tree.outside, "moved");
    let renames = 0;
    const moving = new WorkspaceFiles({
      root: tree.root,
      renameFile: async (from, to) => {
        renames += 1;
        if (renames === 1) renameSync(join(tree.root, "racedir"), moved);
        await rename(from, to);
      },
    });
    const failure = await moving
      .edit({
        files: [
          { path: "a.txt", edits: [{ search: "token", replace: "edited" }] },
          { path: "racedir/f.txt", edits: [{ search: "token", replace: "edited" }] },
        ],
      })
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    expect(failure).toMatchObject({ code: "path_outside_root" });
    expect((failure as Error).message).toContain("restored, so no file was changed");
    expect(readFileSync(first, "utf8")).toBe("first token\n");
    expect(readFileSync(join(moved, "f.txt"), "utf8")).toBe(INSIDE_CONTENT);
    expect(leftoverTemporaries()).toEqual([]);
  });
});

describe("file API without a descriptor directory (no /proc)", () => {
  for (const descriptorDirectory of [null, "/nonexistent/deckhand/fd"]) {
    it(`reads, writes, edits and deletes as before with descriptorDirectory ${descriptorDirectory}`, async () => {
      const plain = new WorkspaceFiles({ root: tree.root, descriptorDirectory });
      expect(await plain.write({ path: "new/deep/a.txt", content: "one\n" })).toEqual({
        path: join(tree.root, "new/deep/a.txt"),
        bytes_written: 4,
        created: true,
      });
      await plain.edit({
        files: [{ path: "new/deep/a.txt", edits: [{ search: "one", replace: "two" }] }],
      });
      expect((await plain.read({ path: "new/deep/a.txt" })).content).toBe("two\n");
      expect(await plain.delete({ path: "new/deep/a.txt" })).toMatchObject({ deleted: true });
      expect(existsSync(join(tree.root, "new/deep/a.txt"))).toBe(false);
      // The path guard still applies.
      await expect(plain.read({ path: "racedir-link/f.txt" })).rejects.toMatchObject({
        code: "path_outside_root",
      });
      expect(leftoverTemporaries()).toEqual([]);
    });
  }
});
