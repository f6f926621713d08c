import { lstatSync, mkdirSync, realpathSync, symlinkSync } from "node:fs";
import { dirname, join, sep } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { resolveWorkspacePath } from "./path-guard.ts";
import { type TemporaryTree, temporaryTree } from "./test-support.ts";
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

describe("resolveWorkspacePath properties", () => {
  let tree: TemporaryTree;

  beforeAll(() => {
    tree = temporaryTree();
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
    tree.link("chain", "in-absolute");
    tree.link("sibling", "../ws-evil");
    tree.link("via-alias", join(tree.alias, "dir"));
    symlinkSync("../ws", join(tree.outside, "back-in"));
  });
  afterAll(() => tree.remove());

  it("never accepts a path whose real location is outside the root", async () => {
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
      `${tree.alias}/`,
      `${tree.root}-evil/`,
      `${tree.root}evil/`,
      `${tree.alias}-evil/`,
      "/",
      `${tree.outside}/`,
      `${tree.base}/`,
      "/etc/",
    );
    await fc.assert(
      fc.asyncProperty(prefix, fc.array(segment, { maxLength: 8 }), async (start, segments) => {
        const path = start + segments.join("/");
        let accepted: string;
        try {
          accepted = await resolveWorkspacePath(tree.root, path);
        } catch (error) {
          expect(error).toBeInstanceOf(WorkspaceFilesError);
          expect(["path_outside_root", "invalid_request"]).toContain(
            (error as WorkspaceFilesError).code,
          );
          return;
        }
        expect(inside(tree.root, accepted), `${path} -> ${accepted}`).toBe(true);
        expect(inside(tree.root, realpathOfNearestExisting(accepted)), path).toBe(true);
        expect(existingSymlinkOn(tree.root, accepted), path).toBeNull();
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
