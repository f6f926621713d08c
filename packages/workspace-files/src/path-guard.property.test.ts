import {
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  symlinkSync,
} from "node:fs";
import { dirname, join, resolve, sep } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type TemporaryTree, temporaryTree } from "../test/support.ts";
import { resolveWorkspacePath } from "./path-guard.ts";
import { WorkspaceFiles } from "./workspace-files.ts";
import { WorkspaceFilesError } from "./workspace-files-error.ts";

const LINKS = [
  "in-absolute",
  "in-relative",
  "out-absolute",
  "out-relative",
  "out-file",
  "dangling-out",
  "dangling-in",
  "loop-a",
  "up",
  "up-up",
  "sibling-dir",
  "sibling-file",
  "chain",
  "sibling",
  "via-alias",
];

function nameArbitrary() {
  return fc
    .string({ unit: "grapheme", minLength: 1, maxLength: 6 })
    .filter(
      (name) =>
        !name.includes("/") &&
        !name.includes("\0") &&
        name !== "." &&
        name !== ".." &&
        Buffer.byteLength(name) <= 255,
    );
}

/** Independent of the guard: walk up until realpath succeeds. */
function realpathOfNearestExisting(path: string): string {
  for (let current = path; ; current = dirname(current)) {
    try {
      return realpathSync(current);
    } catch {
      if (current === dirname(current)) throw new Error(`nothing of ${path} exists`);
    }
  }
}

function existingSymlinkOn(root: string, path: string): string | null {
  let current = root;
  for (const segment of path.slice(root.length).split(sep).filter(Boolean)) {
    current = join(current, segment);
    try {
      if (lstatSync(current).isSymbolicLink()) return current;
    } catch {
      return null;
    }
  }
  return null;
}

function inside(root: string, path: string): boolean {
  return path === root || path.startsWith(`${root}/`);
}

/** The tree every property runs in: files, and links that stay inside, leave, dangle or loop. */
function populate(tree: TemporaryTree): void {
  tree.file("a.txt", "a");
  tree.file("dir/b.txt", "b");
  tree.file("dir/nested/c.txt", "c");
  tree.file("ünï/文件.txt", "unicode");
  tree.link("in-absolute", join(tree.root, "dir"));
  tree.link("in-relative", "dir/nested");
  tree.link("out-absolute", tree.outside);
  tree.link("out-relative", "../outside");
  tree.link("out-file", join(tree.outside, "secret.txt"));
  tree.link("dangling-out", join(tree.outside, "missing", "deeper"));
  tree.link("dangling-in", "missing-target/inner");
  tree.link("loop-a", "loop-b");
  tree.link("loop-b", "loop-a");
  tree.link("dir/up", "..");
  tree.link("dir/up-up", "../..");
  // Inside the root but outside `dir`: what a narrower root must refuse.
  tree.link("dir/sibling-dir", "../ünï");
  tree.link("dir/sibling-file", join(tree.root, "a.txt"));
  tree.link("chain", "in-absolute");
  tree.link("sibling", "../ws-evil");
  tree.link("via-alias", join(tree.alias, "dir"));
  symlinkSync("../ws", join(tree.outside, "back-in"));
}

/** Paths made of names in the tree, links, `..`, odd names and prefixes inside and outside it. */
function pathArbitrary(
  tree: Pick<TemporaryTree, "root" | "alias" | "outside" | "base">,
): fc.Arbitrary<string> {
  const segment = fc.oneof(
    {
      weight: 3,
      arbitrary: fc.constantFrom(
        "..",
        ".",
        "",
        "a.txt",
        "dir",
        "nested",
        "b.txt",
        "missing",
        "ünï",
        "文件.txt",
        "up",
        "up-up",
        "secret.txt",
        "back-in",
        "ws",
        "ws-evil",
        "wsevil",
        "x",
      ),
    },
    { weight: 3, arbitrary: fc.constantFrom(...LINKS) },
    { weight: 1, arbitrary: nameArbitrary() },
    { weight: 1, arbitrary: fc.constantFrom("a\0b", "/") },
  );
  const prefix = fc.constantFrom(
    "",
    "",
    "",
    `${tree.root}/`,
    `${tree.root}/dir/`,
    `${tree.alias}/`,
    `${tree.root}-evil/`,
    `${tree.root}evil/`,
    `${tree.alias}-evil/`,
    "/",
    `${tree.outside}/`,
    `${tree.base}/`,
    "/etc/",
  );
  return fc
    .tuple(prefix, fc.array(segment, { maxLength: 8 }))
    .map(([start, segments]) => start + segments.join("/"));
}

/** Narrower roots: spellings of `dir` and of other directories, and some that must be refused. */
function subRootArbitrary(
  tree: Pick<TemporaryTree, "root" | "alias" | "outside">,
): fc.Arbitrary<string> {
  return fc.constantFrom(
    "dir",
    "./dir/",
    `${tree.root}/dir`,
    `${tree.alias}/dir`,
    "in-absolute",
    "chain",
    "via-alias",
    "dir/nested",
    "in-relative/..",
    "dir/up",
    "ünï",
    ".",
    "out-absolute",
    "out-relative",
    "dir/up-up",
    "a.txt",
    "missing",
    "dangling-in",
    "loop-a",
    "..",
    tree.outside,
  );
}

function expectGuardError(error: unknown, codes: string[]): void {
  expect(error).toBeInstanceOf(WorkspaceFilesError);
  expect(codes).toContain((error as WorkspaceFilesError).code);
}

/**
 * Every entry under `base`, links not followed: its kind and, for files and links, what it
 * holds. Independent of the code under test.
 */
function snapshot(base: string): Map<string, string> {
  const entries = new Map<string, string>();
  const walk = (directory: string) => {
    for (const name of readdirSync(directory)) {
      const path = join(directory, name);
      const stats = lstatSync(path);
      if (stats.isSymbolicLink()) entries.set(path, `link:${readlinkSync(path)}`);
      else if (stats.isDirectory()) {
        entries.set(path, "dir");
        walk(path);
      } else entries.set(path, `file:${readFileSync(path, "utf8")}`);
    }
  };
  walk(base);
  return entries;
}

describe("resolveWorkspacePath properties", () => {
  let tree: TemporaryTree;

  beforeAll(() => {
    tree = temporaryTree();
    populate(tree);
  });
  afterAll(() => tree.remove());

  it("never accepts a path whose real location is outside the root", async () => {
    await fc.assert(
      fc.asyncProperty(pathArbitrary(tree), async (path) => {
        let accepted: string;
        try {
          accepted = await resolveWorkspacePath(tree.root, path);
        } catch (error) {
          expectGuardError(error, ["path_outside_root", "invalid_request"]);
          return;
        }
        expect(inside(tree.root, accepted), `${path} -> ${accepted}`).toBe(true);
        expect(inside(tree.root, realpathOfNearestExisting(accepted)), path).toBe(true);
        expect(existingSymlinkOn(tree.root, accepted), path).toBeNull();
      }),
      { numRuns: 1500 },
    );
  });

  it("with a narrower root, never accepts a path whose real location is outside it", async () => {
    const files = new WorkspaceFiles({ root: tree.root });
    await fc.assert(
      fc.asyncProperty(subRootArbitrary(tree), pathArbitrary(tree), async (subRoot, path) => {
        let accepted: string;
        try {
          accepted = await files.resolve(path, subRoot);
        } catch (error) {
          expectGuardError(error, ["path_outside_root", "invalid_request"]);
          return;
        }
        // The root was accepted, so it is a directory inside the agent's root.
        const limit = realpathSync(resolve(tree.root, subRoot));
        expect(inside(tree.root, limit), subRoot).toBe(true);
        expect(inside(limit, accepted), `${subRoot}: ${path} -> ${accepted}`).toBe(true);
        expect(inside(limit, realpathOfNearestExisting(accepted)), path).toBe(true);
        expect(existingSymlinkOn(limit, accepted), path).toBeNull();
      }),
      { numRuns: 1500 },
    );
  });

  it("accepts every plain relative path inside the root", async () => {
    const plain = temporaryTree();
    try {
      mkdirSync(join(plain.root, "dir", "nested"), { recursive: true });
      const segment = fc.oneof(fc.constantFrom("dir", "nested", "new"), nameArbitrary());
      await fc.assert(
        fc.asyncProperty(fc.array(segment, { minLength: 1, maxLength: 6 }), async (segments) => {
          const path = segments.join("/");
          expect(await resolveWorkspacePath(plain.root, path)).toBe(join(plain.root, ...segments));
          expect(await resolveWorkspacePath(plain.alias, `./${path}`)).toBe(
            join(plain.root, ...segments),
          );
        }),
        { numRuns: 300 },
      );
    } finally {
      plain.remove();
    }
  });
});

/** Stand-ins for a tree's directories, replaced once the tree of a run exists. */
const PLACEHOLDERS = {
  root: "<root>",
  alias: "<alias>",
  outside: "<outside>",
  base: "<base>",
};

describe("delete properties", () => {
  it("removes at most the one entry it names, inside the root, and never a directory", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(undefined, "dir", "in-absolute"),
        pathArbitrary(PLACEHOLDERS),
        async (subRoot, template) => {
          // Every run gets a fresh tree, so the path names it through placeholders.
          const tree = temporaryTree();
          try {
            populate(tree);
            const spelled = template
              .replaceAll(PLACEHOLDERS.root, tree.root)
              .replaceAll(PLACEHOLDERS.alias, tree.alias)
              .replaceAll(PLACEHOLDERS.outside, tree.outside)
              .replaceAll(PLACEHOLDERS.base, tree.base);
            const files = new WorkspaceFiles({ root: tree.root });
            const before = snapshot(tree.base);
            let answer: { path: string; deleted: boolean };
            try {
              answer = await files.delete({
                path: spelled,
                ...(subRoot === undefined ? {} : { root: subRoot }),
              });
            } catch (error) {
              expectGuardError(error, ["path_outside_root", "invalid_request", "not_a_file"]);
              expect(snapshot(tree.base), spelled).toEqual(before);
              return;
            }
            const limit = realpathSync(join(tree.root, subRoot ?? "."));
            expect(inside(limit, answer.path), `${spelled} -> ${answer.path}`).toBe(true);
            expect(inside(limit, realpathOfNearestExisting(dirname(answer.path))), spelled).toBe(
              true,
            );
            const expected = new Map(before);
            if (answer.deleted) {
              expect(before.get(answer.path), spelled).toMatch(/^(file|link):/);
              expected.delete(answer.path);
            }
            expect(snapshot(tree.base), spelled).toEqual(expected);
          } finally {
            tree.remove();
          }
        },
      ),
      { numRuns: 400 },
    );
    // 400 fresh trees on disk: seconds alone, but far longer on a loaded 2-core machine.
  });
});
