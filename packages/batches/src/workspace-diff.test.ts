import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createTempRepository, gitIn, type TempRepository } from "@deckhand/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { applyWorkspaceDiff, collectWorkspaceDiff, splitDiffSections } from "./workspace-diff.ts";

let repository: TempRepository;
let base: string;
beforeEach(() => {
  repository = createTempRepository({
    "README.md": "one\ntwo\n",
    "src/moved.txt": "a file long enough that git sees its move as a rename\n",
    "gone.txt": "bye\n",
  });
  base = gitIn(repository.path, "rev-parse", "HEAD").trim();
});
afterEach(() => repository.remove());

describe("collectWorkspaceDiff", () => {
  it("lists added, modified, deleted, renamed and binary files in the order of the diff's sections", async () => {
    const path = repository.path;
    writeFileSync(join(path, "README.md"), "one\nTWO\nthree\n");
    rmSync(join(path, "gone.txt"));
    mkdirSync(join(path, "lib"));
    renameSync(join(path, "src/moved.txt"), join(path, "lib/moved.txt"));
    writeFileSync(join(path, "image.bin"), Buffer.from([0, 1, 2, 255, 0, 7]));
    const { diff, files } = await collectWorkspaceDiff(path, base);
    expect(files).toEqual([
      { status: "modified", path: "README.md", insertions: 2, deletions: 1 },
      { status: "deleted", path: "gone.txt", insertions: 0, deletions: 1 },
      { status: "added", path: "image.bin", insertions: 0, deletions: 0 },
      {
        status: "renamed",
        previousPath: "src/moved.txt",
        path: "lib/moved.txt",
        insertions: 0,
        deletions: 0,
      },
    ]);
    const sections = splitDiffSections(diff);
    expect(sections).toHaveLength(4);
    expect(sections[2]).toContain("GIT binary patch");
    expect(sections.join("")).toBe(diff);
  });

  it("writes a/ and b/ prefixes, which git apply needs, whatever the user's diff config says", async () => {
    gitIn(repository.path, "config", "diff.noprefix", "true");
    gitIn(repository.path, "config", "diff.mnemonicPrefix", "true");
    writeFileSync(join(repository.path, "README.md"), "changed\n");
    const { diff } = await collectWorkspaceDiff(repository.path, base);
    expect(diff).toContain("diff --git a/README.md b/README.md\n");
    expect(diff).toContain("--- a/README.md\n+++ b/README.md\n");
  });

  it("keeps file names with tabs, newlines and spaces whole, and counts their lines", async () => {
    const odd = "odd\tname\nwith space.txt";
    writeFileSync(join(repository.path, odd), "a\nb\n");
    const { diff, files } = await collectWorkspaceDiff(repository.path, base);
    expect(files).toEqual([{ status: "added", path: odd, insertions: 2, deletions: 0 }]);
    expect(diff.startsWith("diff --git ")).toBe(true);
    expect(splitDiffSections(diff)).toHaveLength(1);
  });

  it("gives an empty diff when nothing changed", async () => {
    expect(await collectWorkspaceDiff(repository.path, base)).toEqual({ diff: "", files: [] });
  });
});

describe("applyWorkspaceDiff", () => {
  it("restores the changes, binary files included, in a clean checkout at the base commit", async () => {
    const path = repository.path;
    writeFileSync(join(path, "image.bin"), Buffer.from([0, 1, 2, 255, 0, 7]));
    writeFileSync(join(path, "README.md"), "changed\n");
    const { diff } = await collectWorkspaceDiff(path, base);
    gitIn(path, "reset", "--hard", "--quiet", base);
    rmSync(join(path, "image.bin"), { force: true });
    await applyWorkspaceDiff(path, diff);
    expect([...readFileSync(join(path, "image.bin"))]).toEqual([0, 1, 2, 255, 0, 7]);
    expect(readFileSync(join(path, "README.md"), "utf8")).toBe("changed\n");
    expect((await collectWorkspaceDiff(path, base)).diff).toBe(diff);
  });
});
