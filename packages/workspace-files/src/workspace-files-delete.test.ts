import {
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
} from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { rejectionOf, type TemporaryTree, temporaryTree } from "../test/support.ts";
import { WorkspaceFiles } from "./workspace-files.ts";

let tree: TemporaryTree;
let files: WorkspaceFiles;
beforeEach(() => {
  tree = temporaryTree();
  files = new WorkspaceFiles({ root: tree.root });
});
afterEach(() => tree.remove());

const secret = () => readFileSync(join(tree.outside, "secret.txt"), "utf8");

describe("delete", () => {
  it("removes a file, answering its real path, and answers deleted: false once it is gone", async () => {
    const target = tree.file("dir/a.txt", "a\n");
    expect(await files.delete({ path: "dir/a.txt" })).toEqual({ path: target, deleted: true });
    expect(existsSync(target)).toBe(false);
    expect(await files.delete({ path: "dir/a.txt" })).toEqual({ path: target, deleted: false });
    expect(await files.delete({ path: target })).toEqual({ path: target, deleted: false });
  });

  it("answers deleted: false below a missing directory or a file, creating nothing", async () => {
    tree.file("plain.txt", "x");
    expect(await files.delete({ path: "no/such/dir/x.txt" })).toEqual({
      path: join(tree.root, "no/such/dir/x.txt"),
      deleted: false,
    });
    expect((await files.delete({ path: "plain.txt/child" })).deleted).toBe(false);
    expect(existsSync(join(tree.root, "no"))).toBe(false);
    expect(readFileSync(join(tree.root, "plain.txt"), "utf8")).toBe("x");
  });

  it("refuses a directory, the root included, with not_a_file", async () => {
    tree.file("dir/inner.txt", "x");
    for (const path of ["dir", "dir/", ".", tree.root, "dir/.."]) {
      const failure = await rejectionOf(files.delete({ path }));
      expect(failure.code, path).toBe("not_a_file");
      expect(failure.message, path).toContain("directory");
    }
    expect(readFileSync(join(tree.root, "dir/inner.txt"), "utf8")).toBe("x");
  });

  it("removes a symlink itself, never what it points to", async () => {
    const target = tree.file("real.txt", "real\n");
    tree.file("dir/kept.txt", "kept\n");
    const cases = [
      tree.link("to-file", "real.txt"),
      tree.link("to-dir", "dir"),
      tree.link("to-outside", join(tree.outside, "secret.txt")),
      tree.link("to-outside-dir", tree.outside),
      tree.link("dangling", join(tree.outside, "missing.txt")),
    ];
    for (const link of cases) {
      expect(await files.delete({ path: link.slice(tree.root.length + 1) })).toEqual({
        path: link,
        deleted: true,
      });
      expect(existsSync(link) || lstatSync(link, { throwIfNoEntry: false }) !== undefined).toBe(
        false,
      );
    }
    expect(readFileSync(target, "utf8")).toBe("real\n");
    expect(readFileSync(join(tree.root, "dir/kept.txt"), "utf8")).toBe("kept\n");
    expect(secret()).toBe("outside secret\n");
    expect(readdirSync(tree.outside)).toEqual(["secret.txt"]);
  });

  it("follows links to directories inside the root on the way, like write", async () => {
    const target = tree.file("dir/a.txt", "a");
    tree.link("in", "dir");
    expect(await files.delete({ path: "in/a.txt" })).toEqual({ path: target, deleted: true });
  });

  it("refuses paths and parent links that lead outside, touching nothing", async () => {
    tree.link("out", tree.outside);
    tree.link("out-relative", "../outside");
    for (const path of [
      "../outside/secret.txt",
      join(tree.outside, "secret.txt"),
      "out/secret.txt",
      "out-relative/secret.txt",
      `${tree.root}-evil/x`,
      `${tree.alias}/out/secret.txt`,
    ]) {
      expect((await rejectionOf(files.delete({ path }))).code, path).toBe("path_outside_root");
    }
    expect(secret()).toBe("outside secret\n");
    expect(readFileSync(join(tree.base, "ws-evil", "x"), "utf8")).toBe("evil\n");
  });

  it("accepts both spellings of a root configured through a symlink", async () => {
    const aliased = new WorkspaceFiles({ root: tree.alias });
    const target = tree.file("a.txt", "a");
    tree.file("b.txt", "b");
    expect(await aliased.delete({ path: join(tree.alias, "a.txt") })).toEqual({
      path: target,
      deleted: true,
    });
    expect((await aliased.delete({ path: join(tree.root, "b.txt") })).deleted).toBe(true);
  });

  it("validates its input like the HTTP API does", async () => {
    expect((await rejectionOf(files.delete({ path: "" }))).code).toBe("invalid_request");
    expect((await rejectionOf(files.delete({ path: "a\0b" }))).code).toBe("invalid_request");
    const extra = { path: "a.txt", recursive: true } as unknown as { path: string };
    expect((await rejectionOf(files.delete(extra))).code).toBe("invalid_request");
  });
});

describe("root (a narrower guard for one request)", () => {
  /** `<root>/wt` is the worktree; `<root>/sibling` is beside it, inside the agent's root. */
  let worktree: string;
  let sibling: string;
  beforeEach(() => {
    worktree = join(tree.root, "wt");
    sibling = join(tree.root, "sibling");
    tree.file("wt/src/a.txt", "worktree a\n");
    tree.file("sibling/secret.txt", "sibling secret\n");
    tree.link("wt/sib", sibling);
    tree.link("wt/sib-relative", "../sibling");
    tree.link("wt/sib-file", join(sibling, "secret.txt"));
    tree.link("wt/inner", "src");
  });
  const siblingSecret = () => readFileSync(join(sibling, "secret.txt"), "utf8");

  it("takes paths relative to it, or absolute inside it, in every operation", async () => {
    const aliased = new WorkspaceFiles({ root: tree.alias });
    for (const [guard, root, path] of [
      [files, "wt", "src/a.txt"],
      [files, worktree, join(worktree, "src/a.txt")],
      [files, "./wt/src/..", "src/a.txt"],
      [aliased, join(tree.alias, "wt"), join(tree.alias, "wt/src/a.txt")],
      [aliased, "wt", join(tree.alias, "wt/src/a.txt")],
      [aliased, "wt", join(worktree, "src/a.txt")],
    ] as const) {
      expect(await guard.read({ root, path }), `${root} ${path}`).toMatchObject({
        path: join(worktree, "src/a.txt"),
        content: "worktree a\n",
      });
    }
    expect(await files.write({ root: "wt", path: "new/b.txt", content: "b\n" })).toMatchObject({
      path: join(worktree, "new/b.txt"),
      created: true,
    });
    expect(
      await files.edit({
        root: worktree,
        files: [{ path: "inner/a.txt", edits: [{ search: "a", replace: "A" }] }],
      }),
    ).toEqual({ files: [{ path: join(worktree, "src/a.txt"), edits_applied: 1 }] });
    expect(await files.delete({ root: "wt", path: "new/b.txt" })).toEqual({
      path: join(worktree, "new/b.txt"),
      deleted: true,
    });
    expect(await files.resolve("src", "wt")).toBe(join(worktree, "src"));
  });

  it("refuses a symlink in it that leads to a sibling directory inside the agent's root", async () => {
    // Without root, the agent's guard accepts these: the sibling is inside its root.
    expect((await files.read({ path: "wt/sib/secret.txt" })).content).toBe("sibling secret\n");
    for (const path of ["sib/secret.txt", "sib-relative/secret.txt", "sib-file"]) {
      const read = await rejectionOf(files.read({ root: "wt", path }));
      expect(read.code, path).toBe("path_outside_root");
      expect(read.message, path).toContain(worktree);
      expect(
        (await rejectionOf(files.write({ root: "wt", path, content: "pwned" }))).code,
        path,
      ).toBe("path_outside_root");
      expect(
        (
          await rejectionOf(
            files.edit({
              root: "wt",
              files: [{ path, edits: [{ search: "secret", replace: "pwned" }] }],
            }),
          )
        ).code,
        path,
      ).toBe("path_outside_root");
    }
    for (const path of ["sib/new.txt", "sib/deeper/new.txt", "sib-relative/new.txt"]) {
      expect(
        (await rejectionOf(files.write({ root: "wt", path, content: "pwned" }))).code,
        path,
      ).toBe("path_outside_root");
    }
    expect((await rejectionOf(files.delete({ root: "wt", path: "sib/secret.txt" }))).code).toBe(
      "path_outside_root",
    );
    expect(siblingSecret()).toBe("sibling secret\n");
    expect(readdirSync(sibling)).toEqual(["secret.txt"]);
    // The link itself lives in the worktree, so deleting it is allowed and leaves the target.
    expect((await files.delete({ root: "wt", path: "sib-file" })).deleted).toBe(true);
    expect(siblingSecret()).toBe("sibling secret\n");
  });

  it("refuses paths that leave it by .. or by an absolute path", async () => {
    for (const path of ["../sibling/secret.txt", join(sibling, "secret.txt"), "src/../../x.txt"]) {
      expect((await rejectionOf(files.read({ root: "wt", path }))).code, path).toBe(
        "path_outside_root",
      );
      expect(
        (await rejectionOf(files.write({ root: worktree, path, content: "x" }))).code,
        path,
      ).toBe("path_outside_root");
    }
    expect(existsSync(join(tree.root, "x.txt"))).toBe(false);
    expect(siblingSecret()).toBe("sibling secret\n");
  });

  it("is itself guarded: it must be an existing directory inside the agent's root", async () => {
    tree.link("out", tree.outside);
    tree.link("wt-link", "wt");
    for (const root of ["..", "../outside", tree.outside, "out", `${tree.root}-evil`]) {
      const failure = await rejectionOf(files.read({ root, path: "secret.txt" }));
      expect(failure.code, root).toBe("path_outside_root");
      expect(failure.message, root).toMatch(/^root /);
    }
    for (const root of ["missing", "wt/src/a.txt"]) {
      const failure = await rejectionOf(files.write({ root, path: "x.txt", content: "x" }));
      expect(failure.code, root).toBe("invalid_request");
      expect(failure.message, root).toContain("not an existing directory");
    }
    expect(existsSync(join(tree.root, "missing"))).toBe(false);
    // A root reached through a link inside the agent's root is confined to the link's target.
    expect((await files.read({ root: "wt-link", path: "src/a.txt" })).path).toBe(
      join(worktree, "src/a.txt"),
    );
    expect(
      (await files.read({ root: "wt-link", path: join(tree.root, "wt-link", "src/a.txt") })).path,
    ).toBe(join(worktree, "src/a.txt"));
    expect((await rejectionOf(files.read({ root: "wt-link", path: "sib/secret.txt" }))).code).toBe(
      "path_outside_root",
    );
  });

  it("does not recreate a worktree that was removed", async () => {
    rmSync(worktree, { recursive: true });
    const failure = await rejectionOf(files.write({ root: "wt", path: "a/b.txt", content: "x" }));
    expect(failure.code).toBe("invalid_request");
    expect(existsSync(worktree)).toBe(false);
    mkdirSync(worktree);
    symlinkSync(sibling, join(worktree, "late"));
    expect((await rejectionOf(files.read({ root: "wt", path: "late/secret.txt" }))).code).toBe(
      "path_outside_root",
    );
  });
});
