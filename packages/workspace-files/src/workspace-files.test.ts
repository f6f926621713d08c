import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { rename } from "node:fs/promises";
import { join } from "node:path";
import fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { rejectionOf, type TemporaryTree, temporaryTree } from "../test/support.ts";
import { WorkspaceFiles } from "./workspace-files.ts";
import { WorkspaceFilesError } from "./workspace-files-error.ts";

let tree: TemporaryTree;
let files: WorkspaceFiles;
beforeEach(() => {
  tree = temporaryTree();
  files = new WorkspaceFiles({ root: tree.root });
});
afterEach(() => tree.remove());

function modeOf(path: string): number {
  return statSync(path).mode & 0o7777;
}

/** A rename that fails on the given calls (1-based) and behaves normally otherwise. */
function failingRename(...failingCalls: number[]) {
  let calls = 0;
  return async (from: string, to: string) => {
    calls += 1;
    if (failingCalls.includes(calls)) {
      throw Object.assign(new Error(`EIO: simulated rename failure ${from} -> ${to}`), {
        code: "EIO",
      });
    }
    await rename(from, to);
  };
}

describe("WorkspaceFiles constructor", () => {
  it("resolves the root's real path once, so a root under a symlink works", () => {
    expect(new WorkspaceFiles({ root: tree.alias }).root).toBe(tree.root);
  });

  it("refuses a root that does not exist or a non-positive read cap", () => {
    expect(() => new WorkspaceFiles({ root: join(tree.base, "nope") })).toThrow(
      WorkspaceFilesError,
    );
    expect(() => new WorkspaceFiles({ root: tree.root, maxReadBytes: 0 })).toThrow(/maxReadBytes/);
  });
});

describe("read", () => {
  it("returns the whole file with its size and line count", async () => {
    const path = tree.file("a.txt", "one\ntwo\nthree\n");
    expect(await files.read({ path: "a.txt" })).toEqual({
      path,
      content: "one\ntwo\nthree\n",
      size_bytes: 14,
      total_lines: 3,
      offset: 1,
      lines: 3,
      truncated: false,
      next_offset: null,
    });
  });

  it("counts a last line without a newline, and an empty file as zero lines", async () => {
    tree.file("no-newline.txt", "one\ntwo");
    tree.file("empty.txt", "");
    expect((await files.read({ path: "no-newline.txt" })).total_lines).toBe(2);
    expect(await files.read({ path: "empty.txt" })).toMatchObject({
      content: "",
      total_lines: 0,
      lines: 0,
      truncated: false,
      next_offset: null,
    });
  });

  it("returns the window offset and limit ask for, with the line to continue from", async () => {
    tree.file("a.txt", "1\n2\n3\n4\n5\n");
    expect(await files.read({ path: "a.txt", offset: 2, limit: 2 })).toMatchObject({
      content: "2\n3\n",
      offset: 2,
      lines: 2,
      total_lines: 5,
      truncated: true,
      next_offset: 4,
    });
    expect(await files.read({ path: "a.txt", offset: 4, limit: 10 })).toMatchObject({
      content: "4\n5\n",
      truncated: false,
      next_offset: null,
    });
  });

  it("answers invalid_request for an offset past the end", async () => {
    tree.file("a.txt", "1\n2\n");
    const failure = await rejectionOf(files.read({ path: "a.txt", offset: 3 }));
    expect(failure.code).toBe("invalid_request");
    expect(failure.message).toContain("has 2 lines");
  });

  it("cuts at the byte cap after the last whole line that fits", async () => {
    tree.file("a.txt", "aaaa\nbbbb\ncccc\n");
    expect(await files.read({ path: "a.txt", max_bytes: 12 })).toMatchObject({
      content: "aaaa\nbbbb\n",
      lines: 2,
      truncated: true,
      next_offset: 3,
    });
  });

  it("never returns more than maxReadBytes, whatever max_bytes asks", async () => {
    const small = new WorkspaceFiles({ root: tree.root, maxReadBytes: 10 });
    tree.file("a.txt", "aaaa\nbbbb\ncccc\n");
    const answer = await small.read({ path: "a.txt", max_bytes: 1_000_000 });
    expect(answer.content).toBe("aaaa\nbbbb\n");
    expect(answer.next_offset).toBe(3);
  });

  it("cuts a line longer than the cap on a UTF-8 character boundary and moves past it", async () => {
    tree.file("a.txt", `${"é".repeat(10)}\nnext\n`);
    const answer = await files.read({ path: "a.txt", max_bytes: 5 });
    expect(answer.content).toBe("éé");
    expect(answer).toMatchObject({ lines: 1, truncated: true, next_offset: 2 });
  });

  it("pages through any text with next_offset and gets every byte back", async () => {
    const line = fc
      .string({ unit: "grapheme", maxLength: 12 })
      .filter((text) => !text.includes("\n") && !text.includes("\0"));
    await fc.assert(
      fc.asyncProperty(
        fc.array(line, { maxLength: 30 }),
        fc.boolean(),
        fc.integer({ min: 1, max: 5 }),
        fc.integer({ min: 0, max: 40 }),
        async (lines, finalNewline, limit, extraBytes) => {
          const text = lines.join("\n") + (finalNewline && lines.length > 0 ? "\n" : "");
          const longest = Math.max(1, ...lines.map((entry) => Buffer.byteLength(entry) + 1));
          writeFileSync(join(tree.root, "paged.txt"), text);
          let collected = "";
          let offset: number | null = 1;
          let pages = 0;
          while (offset !== null) {
            const page = await files.read({
              path: "paged.txt",
              offset,
              limit,
              max_bytes: longest + extraBytes,
            });
            expect(Buffer.byteLength(page.content)).toBeLessThanOrEqual(longest + extraBytes);
            expect(page.total_lines).toBe(
              text === "" ? 0 : text.split("\n").length - (text.endsWith("\n") ? 1 : 0),
            );
            expect(page.truncated).toBe(page.next_offset !== null);
            collected += page.content;
            offset = page.next_offset;
            pages += 1;
            expect(pages).toBeLessThan(100);
          }
          expect(collected).toBe(text);
        },
      ),
      { numRuns: 150 },
    );
  });

  it("reads a small window of a large file and still counts all its lines", async () => {
    const lines = 200_000;
    tree.file("big.log", "a line of log output\n".repeat(lines));
    const answer = await files.read({ path: "big.log", offset: lines, limit: 1 });
    expect(answer).toMatchObject({
      content: "a line of log output\n",
      total_lines: lines,
      next_offset: null,
    });
  });

  it("answers file_not_found for a missing file", async () => {
    const failure = await rejectionOf(files.read({ path: "missing.txt" }));
    expect(failure.code).toBe("file_not_found");
    expect(failure.message).toContain("missing.txt");
  });

  it("answers not_a_file for a directory, the root included", async () => {
    mkdirSync(join(tree.root, "dir"));
    const failure = await rejectionOf(files.read({ path: "dir" }));
    expect(failure.code).toBe("not_a_file");
    expect(failure.message).toContain("directory");
    expect((await rejectionOf(files.read({ path: "." }))).code).toBe("not_a_file");
  });

  it("answers binary_file when the first 8 KiB hold a NUL byte, suggesting xxd", async () => {
    tree.file("image.bin", "PNG\0\x01\x02");
    const failure = await rejectionOf(files.read({ path: "image.bin" }));
    expect(failure.code).toBe("binary_file");
    expect(failure.message).toContain("xxd");
  });

  it("treats a NUL byte after the first 8 KiB as text", async () => {
    tree.file("late.txt", `${"x".repeat(9000)}\0\n`);
    expect((await files.read({ path: "late.txt" })).size_bytes).toBe(9002);
  });

  it("answers path_outside_root for a path or a link leading outside", async () => {
    tree.link("out", tree.outside);
    expect((await rejectionOf(files.read({ path: "../outside/secret.txt" }))).code).toBe(
      "path_outside_root",
    );
    expect((await rejectionOf(files.read({ path: "out/secret.txt" }))).code).toBe(
      "path_outside_root",
    );
  });

  it("reads through a symlink that stays inside the root", async () => {
    const target = tree.file("real.txt", "real\n");
    tree.link("link.txt", "real.txt");
    expect(await files.read({ path: "link.txt" })).toMatchObject({
      path: target,
      content: "real\n",
    });
  });

  it("validates its input like the HTTP API does", async () => {
    tree.file("a.txt", "a");
    const failure = await rejectionOf(files.read({ path: "a.txt", offset: 0 }));
    expect(failure.code).toBe("invalid_request");
    expect(failure.message).toMatch(/^offset: /);
  });
});

describe("write", () => {
  it("creates a file and its missing parent directories", async () => {
    const answer = await files.write({ path: "new/deep/file.txt", content: "héllo\n" });
    const path = join(tree.root, "new/deep/file.txt");
    expect(answer).toEqual({ path, bytes_written: 7, created: true });
    expect(readFileSync(path, "utf8")).toBe("héllo\n");
  });

  it("replaces an existing file, keeping its mode and leaving no temporary file", async () => {
    const path = tree.file("script.sh", "old\n");
    chmodSync(path, 0o750);
    const answer = await files.write({ path: "script.sh", content: "new\n" });
    expect(answer.created).toBe(false);
    expect(readFileSync(path, "utf8")).toBe("new\n");
    expect(modeOf(path)).toBe(0o750);
    expect(readdirSync(tree.root)).toEqual(["script.sh"]);
  });

  it("keeps a private file private", async () => {
    const path = tree.file("secret.env", "A=1\n");
    chmodSync(path, 0o600);
    await files.write({ path: "secret.env", content: "A=2\n" });
    expect(modeOf(path)).toBe(0o600);
  });

  it("leaves the old content and no temporary file when the final rename fails", async () => {
    const path = tree.file("keep.txt", "old content\n");
    const failing = new WorkspaceFiles({ root: tree.root, renameFile: failingRename(1) });
    const failure = await rejectionOf(
      failing.write({ path: "keep.txt", content: "new content\n" }),
    );
    expect(failure.code).toBe("internal");
    expect(failure.message).toContain("EIO");
    expect(readFileSync(path, "utf8")).toBe("old content\n");
    expect(readdirSync(tree.root)).toEqual(["keep.txt"]);
  });

  it("writes the target when the path is a symlink inside the root", async () => {
    const target = tree.file("real.txt", "old\n");
    const link = tree.link("link.txt", "real.txt");
    expect((await files.write({ path: "link.txt", content: "new\n" })).path).toBe(target);
    expect(readFileSync(target, "utf8")).toBe("new\n");
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
  });

  it("refuses to write through a symlink that leads outside, touching nothing", async () => {
    tree.link("out-file", join(tree.outside, "secret.txt"));
    tree.link("out", tree.outside);
    tree.link("dangling", join(tree.outside, "created.txt"));
    for (const path of ["out-file", "out/new.txt", "out/new-dir/x.txt", "dangling"]) {
      expect((await rejectionOf(files.write({ path, content: "pwned" }))).code, path).toBe(
        "path_outside_root",
      );
    }
    expect(readFileSync(join(tree.outside, "secret.txt"), "utf8")).toBe("outside secret\n");
    expect(readdirSync(tree.outside).sort()).toEqual(["secret.txt"]);
  });

  it("refuses sibling-prefix paths", async () => {
    for (const path of [`${tree.root}-evil/x`, `${tree.root}evil/new.txt`]) {
      expect((await rejectionOf(files.write({ path, content: "x" }))).code).toBe(
        "path_outside_root",
      );
    }
    expect(readFileSync(join(tree.base, "ws-evil", "x"), "utf8")).toBe("evil\n");
    expect(readdirSync(join(tree.base, "wsevil"))).toEqual([]);
  });

  it("answers not_a_file for a directory or a path below a file", async () => {
    mkdirSync(join(tree.root, "dir"));
    tree.file("plain.txt", "x");
    expect((await rejectionOf(files.write({ path: "dir", content: "x" }))).code).toBe("not_a_file");
    expect((await rejectionOf(files.write({ path: ".", content: "x" }))).code).toBe("not_a_file");
    const below = await rejectionOf(files.write({ path: "plain.txt/child.txt", content: "x" }));
    expect(below.code).toBe("not_a_file");
    expect(below.message).toContain("plain.txt");
  });
});

describe("write after the root disappears", () => {
  it("answers file_not_found instead of recreating the root", async () => {
    rmSync(tree.root, { recursive: true });
    const failure = await rejectionOf(files.write({ path: "a/b.txt", content: "x" }));
    expect(failure.code).toBe("file_not_found");
    expect(existsSync(tree.root)).toBe(false);
  });
});

describe("edit", () => {
  it("applies edits in order to the evolving content", async () => {
    const path = tree.file("a.ts", "const a = 1;\nconst b = 2;\n");
    const answer = await files.edit({
      files: [
        {
          path: "a.ts",
          edits: [
            { search: "const a = 1;", replace: "const a = 10;" },
            { search: "a = 10", replace: "a = 100" },
          ],
        },
      ],
    });
    expect(answer).toEqual({ files: [{ path, edits_applied: 2 }] });
    expect(readFileSync(path, "utf8")).toBe("const a = 100;\nconst b = 2;\n");
  });

  it("inserts the replacement literally, $ patterns included", async () => {
    const path = tree.file("a.txt", "price\n");
    await files.edit({
      files: [{ path: "a.txt", edits: [{ search: "price", replace: "$& $1 $$" }] }],
    });
    expect(readFileSync(path, "utf8")).toBe("$& $1 $$\n");
  });

  it("answers edit_failed naming file, edit and count when a search matches nothing", async () => {
    const path = tree.file("a.txt", "hello\n");
    const failure = await rejectionOf(
      files.edit({
        files: [
          {
            path: "a.txt",
            edits: [
              { search: "hello", replace: "hi" },
              { search: "absent", replace: "x" },
            ],
          },
        ],
      }),
    );
    expect(failure.code).toBe("edit_failed");
    expect(failure.message).toContain("files[0].edits[1]");
    expect(failure.message).toContain("a.txt");
    expect(failure.message).toContain("matches 0 times");
    expect(failure.message).toContain("surrounding context");
    expect(readFileSync(path, "utf8")).toBe("hello\n");
  });

  it("answers edit_failed when a search matches more than once, suggesting more context", async () => {
    tree.file("a.txt", "x = 1\nx = 1\n");
    const failure = await rejectionOf(
      files.edit({ files: [{ path: "a.txt", edits: [{ search: "x = 1", replace: "x = 2" }] }] }),
    );
    expect(failure.code).toBe("edit_failed");
    expect(failure.message).toContain("matches 2 times");
    expect(failure.message).toContain("surrounding context");
  });

  it("counts overlapping matches as ambiguous", async () => {
    tree.file("a.txt", "aaa");
    const failure = await rejectionOf(
      files.edit({ files: [{ path: "a.txt", edits: [{ search: "aa", replace: "b" }] }] }),
    );
    expect(failure.message).toContain("matches 2 times");
  });

  it("changes no file when an edit of a later file fails", async () => {
    const first = tree.file("first.txt", "alpha\n");
    const second = tree.file("second.txt", "beta\n");
    const failure = await rejectionOf(
      files.edit({
        files: [
          { path: "first.txt", edits: [{ search: "alpha", replace: "ALPHA" }] },
          { path: "second.txt", edits: [{ search: "gamma", replace: "GAMMA" }] },
        ],
      }),
    );
    expect(failure.code).toBe("edit_failed");
    expect(failure.message).toContain("files[1].edits[0]");
    expect(readFileSync(first, "utf8")).toBe("alpha\n");
    expect(readFileSync(second, "utf8")).toBe("beta\n");
  });

  it("reports every failing edit at once", async () => {
    tree.file("first.txt", "alpha\n");
    tree.file("second.txt", "beta beta\n");
    const failure = await rejectionOf(
      files.edit({
        files: [
          { path: "first.txt", edits: [{ search: "nope", replace: "x" }] },
          { path: "second.txt", edits: [{ search: "beta", replace: "x" }] },
        ],
      }),
    );
    expect(failure.message).toContain("files[0].edits[0]");
    expect(failure.message).toContain("files[1].edits[0]");
  });

  it("edits both files when every edit matches, keeping their modes", async () => {
    const first = tree.file("first.sh", "alpha\n");
    const second = tree.file("second.txt", "beta\n");
    chmodSync(first, 0o755);
    await files.edit({
      files: [
        { path: "first.sh", edits: [{ search: "alpha", replace: "ALPHA" }] },
        { path: "second.txt", edits: [{ search: "beta", replace: "BETA" }] },
      ],
    });
    expect(readFileSync(first, "utf8")).toBe("ALPHA\n");
    expect(readFileSync(second, "utf8")).toBe("BETA\n");
    expect(modeOf(first)).toBe(0o755);
    expect(readdirSync(tree.root).sort()).toEqual(["first.sh", "second.txt"]);
  });

  it("chains edits when one request names the same file twice, even by another spelling", async () => {
    const path = tree.file("a.txt", "one\n");
    tree.link("alias.txt", "a.txt");
    await files.edit({
      files: [
        { path: "a.txt", edits: [{ search: "one", replace: "two" }] },
        { path: "alias.txt", edits: [{ search: "two", replace: "three" }] },
      ],
    });
    expect(readFileSync(path, "utf8")).toBe("three\n");
  });

  it("restores the first file when replacing the second fails", async () => {
    const first = tree.file("first.txt", "alpha\n");
    const second = tree.file("second.txt", "beta\n");
    const failing = new WorkspaceFiles({ root: tree.root, renameFile: failingRename(2) });
    const failure = await rejectionOf(
      failing.edit({
        files: [
          { path: "first.txt", edits: [{ search: "alpha", replace: "ALPHA" }] },
          { path: "second.txt", edits: [{ search: "beta", replace: "BETA" }] },
        ],
      }),
    );
    expect(failure.code).toBe("internal");
    expect(failure.message).toContain("restored");
    expect(readFileSync(first, "utf8")).toBe("alpha\n");
    expect(readFileSync(second, "utf8")).toBe("beta\n");
    expect(readdirSync(tree.root).sort()).toEqual(["first.txt", "second.txt"]);
  });

  it("answers file_not_found, not_a_file and binary_file before writing anything", async () => {
    const first = tree.file("first.txt", "alpha\n");
    mkdirSync(join(tree.root, "dir"));
    tree.file("image.bin", "\0\x01");
    writeFileSync(join(tree.root, "latin1.txt"), Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x0a]));
    const cases: [string, string][] = [
      ["missing.txt", "file_not_found"],
      ["dir", "not_a_file"],
      ["image.bin", "binary_file"],
      ["latin1.txt", "binary_file"],
      ["../outside/secret.txt", "path_outside_root"],
    ];
    for (const [path, code] of cases) {
      const failure = await rejectionOf(
        files.edit({
          files: [
            { path: "first.txt", edits: [{ search: "alpha", replace: "ALPHA" }] },
            { path, edits: [{ search: "x", replace: "y" }] },
          ],
        }),
      );
      expect(failure.code, path).toBe(code);
      expect(readFileSync(first, "utf8")).toBe("alpha\n");
    }
    expect(existsSync(join(tree.root, "missing.txt"))).toBe(false);
  });

  it("answers invalid_request for an empty edit list", async () => {
    tree.file("a.txt", "a");
    expect((await rejectionOf(files.edit({ files: [{ path: "a.txt", edits: [] }] }))).code).toBe(
      "invalid_request",
    );
  });
});
