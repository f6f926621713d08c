import { execFile } from "node:child_process";
import { closeSync, openSync } from "node:fs";
import { mkdir, mkdtemp, readdir, readFile, rm, stat, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { extractTar } from "./extract-tar.ts";

const run = promisify(execFile);
let scratch: string;

beforeEach(async () => {
  scratch = await mkdtemp(join(tmpdir(), "deckhand-extract-tar-"));
});
afterEach(async () => {
  await rm(scratch, { recursive: true, force: true });
});

/** Every file under `directory` with its bytes, and every directory, by relative path. */
async function tree(directory: string): Promise<Record<string, string>> {
  const entries: Record<string, string> = {};
  for (const entry of await readdir(directory, { recursive: true, withFileTypes: true })) {
    const path = join(entry.parentPath, entry.name).slice(directory.length + 1);
    entries[path] = entry.isDirectory()
      ? "<dir>"
      : (await readFile(join(directory, path))).toString("base64");
  }
  return entries;
}

/** GNU tar's ustar archive of `source`, member names kept absolute as PGlite writes them. */
async function archiveOf(source: string, archive: string): Promise<void> {
  const names = (await readdir(source)).sort();
  await run("tar", ["--format=ustar", "-cf", archive, "-C", source, ...names]);
}

async function extract(archive: string, target: string): Promise<void> {
  const descriptor = openSync(archive, "r");
  try {
    extractTar(descriptor, target);
  } finally {
    closeSync(descriptor);
  }
}

const segment = fc.stringMatching(/^[a-z0-9_]{1,12}$/);

describe("extractTar", () => {
  it("writes back every file and directory tar archived, byte for byte", async () => {
    let round = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(
          fc.record({
            path: fc.array(segment, { minLength: 1, maxLength: 4 }),
            bytes: fc.oneof(
              fc.uint8Array({ maxLength: 2_000 }),
              // Pages of zeros between bytes that are not: what the extraction leaves as holes.
              fc
                .tuple(
                  fc.uint8Array({ maxLength: 9_000 }),
                  fc.nat({ max: 20_000 }),
                  fc.uint8Array({ maxLength: 9_000 }),
                )
                .map(([head, zeros, tail]) => Buffer.concat([head, Buffer.alloc(zeros), tail])),
            ),
          }),
          { minLength: 1, maxLength: 12, selector: (file) => file.path[0] },
        ),
        async (files) => {
          const source = join(scratch, `source-${round}`);
          const target = join(scratch, `target-${round}`);
          const archive = join(scratch, `archive-${round}.tar`);
          round++;
          await mkdir(source);
          for (const file of files) {
            const path = join(source, ...file.path);
            await mkdir(join(path, ".."), { recursive: true });
            await writeFile(path, file.bytes);
          }
          await archiveOf(source, archive);
          await mkdir(target);
          await extract(archive, target);
          expect(await tree(target)).toEqual(await tree(source));
        },
      ),
      { numRuns: 25 },
    );
  }, 120_000);

  it("copies a file larger than its copy buffer, and one whose name needs the ustar prefix", async () => {
    const source = join(scratch, "source");
    const target = join(scratch, "target");
    const longDirectory = join(source, "d".repeat(60), "e".repeat(60));
    await mkdir(longDirectory, { recursive: true });
    const large = Buffer.alloc(3 * 1024 * 1024 + 7);
    for (let index = 0; index < large.length; index++) large[index] = (index * 31) % 251;
    await writeFile(join(source, "large"), large);
    await writeFile(join(longDirectory, "f".repeat(40)), "deep");
    await archiveOf(source, join(scratch, "archive.tar"));
    await mkdir(target);
    await extract(join(scratch, "archive.tar"), target);
    expect(await tree(target)).toEqual(await tree(source));
  });

  it("leaves pages of zeros as holes, and the file reads back whole", async () => {
    const source = join(scratch, "source");
    const target = join(scratch, "target");
    await mkdir(source);
    // Like a fresh WAL segment: a few pages written, then zeros to its full length.
    const segment = Buffer.alloc(4 * 1024 * 1024);
    segment.fill(7, 0, 3 * 8192 + 100);
    segment.fill(9, 2 * 1024 * 1024, 2 * 1024 * 1024 + 8192);
    await writeFile(join(source, "segment"), segment);
    await writeFile(join(source, "zeros"), Buffer.alloc(5 * 8192 + 3));
    await archiveOf(source, join(scratch, "archive.tar"));
    await mkdir(target);
    await extract(join(scratch, "archive.tar"), target);
    expect(await tree(target)).toEqual(await tree(source));
    // 512-byte blocks: the segment's 5 pages that hold data, with room for the file system's own.
    expect((await stat(join(target, "segment"))).blocks).toBeLessThan((16 * 8192) / 512);
    expect((await stat(join(target, "zeros"))).size).toBe(5 * 8192 + 3);
  });

  it("refuses an entry that would land outside the directory", async () => {
    await mkdir(join(scratch, "inside"));
    await writeFile(join(scratch, "escape"), "x");
    const archive = join(scratch, "escape.tar");
    await run("tar", [
      "--format=ustar",
      "-P",
      "-cf",
      archive,
      "-C",
      join(scratch, "inside"),
      "../escape",
    ]);
    await mkdir(join(scratch, "target"));
    await expect(extract(archive, join(scratch, "target"))).rejects.toThrow(/outside/);
    expect(await readdir(join(scratch, "target"))).toEqual([]);
  });

  it("refuses a symbolic link", async () => {
    await mkdir(join(scratch, "source"));
    await symlink("/etc/passwd", join(scratch, "source", "link"));
    await archiveOf(join(scratch, "source"), join(scratch, "link.tar"));
    await mkdir(join(scratch, "target"));
    await expect(extract(join(scratch, "link.tar"), join(scratch, "target"))).rejects.toThrow(
      /neither a file nor a directory/,
    );
  });

  it("refuses a header whose checksum does not match, and an archive cut short", async () => {
    await mkdir(join(scratch, "source"));
    await writeFile(join(scratch, "source", "file"), "x".repeat(3_000));
    const archive = join(scratch, "archive.tar");
    await archiveOf(join(scratch, "source"), archive);
    const bytes = await readFile(archive);
    const corrupt = Buffer.from(bytes);
    corrupt[10] = (corrupt[10]! + 1) % 256;
    await writeFile(join(scratch, "corrupt.tar"), corrupt);
    await writeFile(join(scratch, "short.tar"), bytes.subarray(0, 1_024));
    await mkdir(join(scratch, "a"));
    await mkdir(join(scratch, "b"));
    await expect(extract(join(scratch, "corrupt.tar"), join(scratch, "a"))).rejects.toThrow(
      /checksum/,
    );
    await expect(extract(join(scratch, "short.tar"), join(scratch, "b"))).rejects.toThrow(
      /ends in the middle/,
    );
  });
});
