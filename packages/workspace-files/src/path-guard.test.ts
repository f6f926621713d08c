import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { rejectionOf, type TemporaryTree, temporaryTree } from "../test/support.ts";
import { isPathInsideRoot, resolveWorkspacePath } from "./path-guard.ts";
import { WorkspaceFilesError } from "./workspace-files-error.ts";

describe("isPathInsideRoot", () => {
  it("accepts the root and paths below it", () => {
    expect(isPathInsideRoot("/ws", "/ws")).toBe(true);
    expect(isPathInsideRoot("/ws", "/ws/a/b")).toBe(true);
    expect(isPathInsideRoot("/", "/anything")).toBe(true);
  });

  it("rejects sibling prefixes and parents", () => {
    expect(isPathInsideRoot("/ws", "/ws-evil/x")).toBe(false);
    expect(isPathInsideRoot("/ws", "/wsevil")).toBe(false);
    expect(isPathInsideRoot("/ws", "/")).toBe(false);
  });
});

describe("resolveWorkspacePath", () => {
  let tree: TemporaryTree;
  beforeEach(() => {
    tree = temporaryTree();
  });
  afterEach(() => tree.remove());

  it("resolves a relative path against the root", async () => {
    tree.file("src/a.ts", "a");
    expect(await resolveWorkspacePath(tree.root, "src/a.ts")).toBe(join(tree.root, "src/a.ts"));
    expect(await resolveWorkspacePath(tree.root, "./src/../src/a.ts")).toBe(
      join(tree.root, "src/a.ts"),
    );
  });

  it("accepts an absolute path inside the root and the root itself", async () => {
    const path = tree.file("a.txt");
    expect(await resolveWorkspacePath(tree.root, path)).toBe(path);
    expect(await resolveWorkspacePath(tree.root, ".")).toBe(tree.root);
    expect(await resolveWorkspacePath(tree.root, `${tree.root}/`)).toBe(tree.root);
  });

  it("accepts paths that do not exist yet, however deep", async () => {
    expect(await resolveWorkspacePath(tree.root, "new/dir/file.txt")).toBe(
      join(tree.root, "new/dir/file.txt"),
    );
  });

  it("rejects .. traversal that escapes the root, naming the path and the root", async () => {
    const failure = await rejectionOf(resolveWorkspacePath(tree.root, "../outside/secret.txt"));
    expect(failure.code).toBe("path_outside_root");
    expect(failure.message).toContain('"../outside/secret.txt"');
    expect(failure.message).toContain(tree.root);
    expect(failure.message).toContain("relative to the root");
    expect((await rejectionOf(resolveWorkspacePath(tree.root, "a/../../ws-evil/x"))).code).toBe(
      "path_outside_root",
    );
  });

  it("allows .. that stays inside the root", async () => {
    expect(await resolveWorkspacePath(tree.root, "a/b/../../c")).toBe(join(tree.root, "c"));
  });

  it("rejects absolute paths outside the root", async () => {
    for (const path of ["/etc/passwd", join(tree.outside, "secret.txt"), tree.base, "/"]) {
      expect((await rejectionOf(resolveWorkspacePath(tree.root, path))).code).toBe(
        "path_outside_root",
      );
    }
  });

  it("rejects sibling directories whose name starts with the root's", async () => {
    for (const path of [
      `${tree.root}-evil/x`,
      `${tree.root}evil`,
      `${tree.root}evil/new.txt`,
      "../ws-evil/x",
    ]) {
      expect((await rejectionOf(resolveWorkspacePath(tree.root, path))).code).toBe(
        "path_outside_root",
      );
    }
  });

  it("answers invalid_request for an empty path or a NUL byte", async () => {
    const empty = await rejectionOf(resolveWorkspacePath(tree.root, ""));
    expect(empty.code).toBe("invalid_request");
    expect(empty.message).toContain("empty");
    const nul = await rejectionOf(resolveWorkspacePath(tree.root, "a\0b"));
    expect(nul.code).toBe("invalid_request");
    expect(nul.message).toContain("NUL");
  });

  it("follows symlinks that stay inside the root to their target", async () => {
    tree.file("real/target.txt", "x");
    tree.link("absolute-link", join(tree.root, "real"));
    tree.link("relative-link", "real/target.txt");
    tree.link("deep/up", "..");
    expect(await resolveWorkspacePath(tree.root, "absolute-link/target.txt")).toBe(
      join(tree.root, "real/target.txt"),
    );
    expect(await resolveWorkspacePath(tree.root, "relative-link")).toBe(
      join(tree.root, "real/target.txt"),
    );
    expect(await resolveWorkspacePath(tree.root, "deep/up/real/new.txt")).toBe(
      join(tree.root, "real/new.txt"),
    );
  });

  it("rejects symlinks that lead outside, for existing and not yet existing paths", async () => {
    tree.link("out", tree.outside);
    tree.link("out-relative", "../outside");
    tree.link("out-file", join(tree.outside, "secret.txt"));
    tree.link("dir/up-up", "../..");
    for (const path of [
      "out/secret.txt",
      "out/new.txt",
      "out/new/deeper.txt",
      "out-relative",
      "out-file",
      "dir/up-up/outside",
    ]) {
      const failure = await rejectionOf(resolveWorkspacePath(tree.root, path));
      expect(failure.code, path).toBe("path_outside_root");
      expect(failure.message).toContain("symbolic link");
    }
  });

  it("rejects a dangling symlink whose target would be created outside", async () => {
    tree.link("dangling", join(tree.outside, "not-yet.txt"));
    tree.link("dangling-dir", join(tree.outside, "missing-dir"));
    expect((await rejectionOf(resolveWorkspacePath(tree.root, "dangling"))).code).toBe(
      "path_outside_root",
    );
    expect((await rejectionOf(resolveWorkspacePath(tree.root, "dangling-dir/file"))).code).toBe(
      "path_outside_root",
    );
  });

  it("resolves a dangling symlink inside the root to its future target", async () => {
    tree.link("later", "future/file.txt");
    expect(await resolveWorkspacePath(tree.root, "later")).toBe(join(tree.root, "future/file.txt"));
  });

  it("applies .. to the text before following links", async () => {
    tree.link("out", join(tree.outside));
    expect(await resolveWorkspacePath(tree.root, "out/../inside.txt")).toBe(
      join(tree.root, "inside.txt"),
    );
  });

  it("reports a symlink cycle as invalid_request", async () => {
    tree.link("loop-a", "loop-b");
    tree.link("loop-b", "loop-a");
    const failure = await rejectionOf(resolveWorkspacePath(tree.root, "loop-a/file"));
    expect(failure.code).toBe("invalid_request");
    expect(failure.message).toContain("symbolic links");
  });

  it("works when the root is given through a symlink, in either spelling", async () => {
    tree.file("a.txt");
    expect(await resolveWorkspacePath(tree.alias, "a.txt")).toBe(join(tree.root, "a.txt"));
    expect(await resolveWorkspacePath(tree.alias, join(tree.alias, "a.txt"))).toBe(
      join(tree.root, "a.txt"),
    );
    expect(await resolveWorkspacePath(tree.alias, join(tree.root, "new.txt"))).toBe(
      join(tree.root, "new.txt"),
    );
    expect((await rejectionOf(resolveWorkspacePath(tree.alias, `${tree.alias}-evil/x`))).code).toBe(
      "path_outside_root",
    );
  });

  it("accepts paths below a file, leaving the failure to the operation", async () => {
    tree.file("plain.txt");
    expect(await resolveWorkspacePath(tree.root, "plain.txt/child")).toBe(
      join(tree.root, "plain.txt/child"),
    );
  });

  it("accepts unicode names", async () => {
    mkdirSync(join(tree.root, "ünïcödé"));
    expect(await resolveWorkspacePath(tree.root, "ünïcödé/文件.txt")).toBe(
      join(tree.root, "ünïcödé/文件.txt"),
    );
  });

  it("throws invalid_request when the root does not exist", async () => {
    const error = await resolveWorkspacePath(join(tree.base, "missing"), "a").catch(
      (caught) => caught,
    );
    expect(error).toBeInstanceOf(WorkspaceFilesError);
    expect(error.code).toBe("invalid_request");
    expect(error.message).toContain("missing");
  });
});
