import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { placeLocalFile } from "./place-local-file.ts";

describe("placeLocalFile", () => {
  let base: string;
  let temporary: string;
  let outside: string;
  let source: string;
  const previousTmpdir = process.env.TMPDIR;

  beforeEach(() => {
    base = realpathSync(mkdtempSync(join(tmpdir(), "deckhand-place-local-")));
    // The run's temporary directory is `temporary`; `outside` stands for anywhere else.
    temporary = join(base, "tmp");
    outside = join(base, "outside");
    mkdirSync(temporary);
    mkdirSync(outside);
    source = join(base, "source.txt");
    writeFileSync(source, "step file\n");
    process.env.TMPDIR = temporary;
  });

  afterEach(() => {
    if (previousTmpdir === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = previousTmpdir;
    rmSync(base, { recursive: true, force: true });
  });

  it("places a file inside the temporary directory and removes it on release", async () => {
    const target = join(temporary, "new", "script.py");
    const release = await placeLocalFile(target, source, 0);
    expect(readFileSync(target, "utf8")).toBe("step file\n");
    await release();
    expect(existsSync(target)).toBe(false);
  });

  it("refuses a path through a symlink that leads outside, and writes nothing there", async () => {
    // /tmp/link -> elsewhere: the lexical check passed it, and the file landed elsewhere.
    symlinkSync(outside, join(temporary, "link"));
    for (const target of [join(temporary, "link", "x.txt"), join(temporary, "link", "a", "b")]) {
      await expect(placeLocalFile(target, source, 1)).rejects.toThrow(
        `step 1 places ${target}, which a local run can only create inside ${temporary}, and it leads outside`,
      );
    }
    expect(readdirSync(outside)).toEqual([]);
  });

  it("refuses a target that is itself a link, and a mount link through an outside directory", async () => {
    symlinkSync(join(outside, "planted.txt"), join(temporary, "planted.txt"));
    await expect(placeLocalFile(join(temporary, "planted.txt"), source, 0)).rejects.toThrow(
      "already exists on this machine",
    );
    symlinkSync(outside, join(temporary, "link"));
    await expect(
      placeLocalFile(join(temporary, "link", "mounted"), source, 0, "link"),
    ).rejects.toThrow("leads outside");
    expect(readdirSync(outside)).toEqual([]);
  });

  it("still refuses paths outside the temporary directory and existing files", async () => {
    await expect(placeLocalFile(join(outside, "x.txt"), source, 0)).rejects.toThrow(
      "which a local run can only create inside",
    );
    writeFileSync(join(temporary, "taken.txt"), "someone's\n");
    await expect(placeLocalFile(join(temporary, "taken.txt"), source, 0)).rejects.toThrow(
      "already exists on this machine",
    );
    expect(readFileSync(join(temporary, "taken.txt"), "utf8")).toBe("someone's\n");
    expect(readdirSync(outside)).toEqual([]);
  });
});
