import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { placeNewEntry } from "./place-new-entry.ts";

describe("placeNewEntry", () => {
  let base: string;
  let root: string;
  let outside: string;
  let source: string;

  beforeEach(() => {
    base = realpathSync(mkdtempSync(join(tmpdir(), "deckhand-place-entry-")));
    root = join(base, "root");
    outside = join(base, "outside");
    mkdirSync(root);
    mkdirSync(outside);
    source = join(base, "script.sh");
    writeFileSync(source, "#!/bin/sh\necho hi\n");
    chmodSync(source, 0o750);
  });
  afterEach(() => rmSync(base, { recursive: true, force: true }));

  for (const descriptorDirectory of [undefined, null]) {
    const label = descriptorDirectory === null ? "without descriptor checks" : "with descriptors";
    it(`copies a file with its mode into new directories, and removes it (${label})`, async () => {
      const placed = await placeNewEntry({
        root,
        path: "a/b/script.sh",
        content: { copyOf: source },
        descriptorDirectory,
      });
      expect(placed.path).toBe(join(root, "a/b/script.sh"));
      expect(readFileSync(placed.path, "utf8")).toBe("#!/bin/sh\necho hi\n");
      expect(statSync(placed.path).mode & 0o777).toBe(0o750);
      await placed.remove();
      expect(existsSync(placed.path)).toBe(false);
    });

    it(`refuses a path through a link to outside, creating nothing (${label})`, async () => {
      symlinkSync(outside, join(root, "link"));
      for (const path of ["link/x", join(root, "link/deep/x"), "../outside/x"]) {
        await expect(
          placeNewEntry({ root, path, content: { copyOf: source }, descriptorDirectory }),
        ).rejects.toMatchObject({ code: "path_outside_root" });
      }
      expect(readdirSync(outside)).toEqual([]);
    });
  }

  it("links, and refuses any existing entry, a dangling link included", async () => {
    const link = await placeNewEntry({ root, path: "mounted", content: { linkTo: source } });
    expect(readlinkSync(link.path)).toBe(source);
    await expect(
      placeNewEntry({ root, path: "mounted", content: { copyOf: source } }),
    ).rejects.toMatchObject({ code: "conflict" });
    await link.remove();
    expect(existsSync(join(root, "mounted"))).toBe(false);
    expect(existsSync(source)).toBe(true);

    symlinkSync(join(root, "nowhere"), join(root, "dangling"));
    await expect(
      placeNewEntry({ root, path: "dangling", content: { copyOf: source } }),
    ).rejects.toMatchObject({ code: "conflict" });
    expect(existsSync(join(root, "nowhere"))).toBe(false);
    expect(lstatSync(join(root, "dangling")).isSymbolicLink()).toBe(true);
  });
});
