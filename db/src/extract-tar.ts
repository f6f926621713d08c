import type { FileHandle } from "node:fs/promises";
import { mkdir, open } from "node:fs/promises";
import { dirname, join, resolve, sep } from "node:path";

const BLOCK = 512;
// One buffer for the whole archive: a data directory's largest file is a 16 MB WAL segment, and
// copying in slices keeps the process from holding (and leaving to the collector) any of it.
const COPY_CHUNK = 1024 * 1024;

interface TarEntry {
  name: string;
  size: number;
  type: "file" | "directory";
}

/**
 * Writes the regular files and directories of a ustar archive (as PGlite's `dumpDataDir` makes
 * them) under `directory`, reading the archive in fixed slices instead of whole. Names are taken
 * relative to `directory` (a leading `/` dropped); an entry that would land outside it, a link or
 * device, or a header whose checksum is wrong fails the whole extraction.
 */
export async function extractTar(archive: FileHandle, directory: string): Promise<void> {
  const root = resolve(directory);
  const buffer = Buffer.allocUnsafe(COPY_CHUNK);
  let position = 0;
  for (;;) {
    await readExactly(archive, buffer, BLOCK, position);
    position += BLOCK;
    const entry = parseHeader(buffer.subarray(0, BLOCK));
    if (entry === null) return;
    const target = entryPath(root, entry.name);
    if (entry.type === "directory") {
      await mkdir(target, { recursive: true, mode: 0o750 });
      continue;
    }
    await mkdir(dirname(target), { recursive: true, mode: 0o750 });
    await copyRange(archive, position, entry.size, target, buffer);
    position += Math.ceil(entry.size / BLOCK) * BLOCK;
  }
}

/** The header's entry; null for the zero block that ends an archive. */
export function parseHeader(header: Buffer): TarEntry | null {
  if (header.every((byte) => byte === 0)) return null;
  const stored = octal(header, 148, 8);
  let sum = 0;
  for (let index = 0; index < BLOCK; index++) {
    // The checksum is counted with its own field read as spaces.
    sum += index >= 148 && index < 156 ? 0x20 : header[index]!;
  }
  if (stored !== sum) throw new Error("A tar header's checksum does not match it.");
  const name = text(header, 0, 100);
  const prefix =
    header.subarray(257, 262).toString("latin1") === "ustar" ? text(header, 345, 155) : "";
  const fullName = prefix === "" ? name : `${prefix}/${name}`;
  const flag = String.fromCharCode(header[156]!);
  if (flag === "5") return { name: fullName, size: 0, type: "directory" };
  if (flag === "0" || flag === "\0") {
    return { name: fullName, size: octal(header, 124, 12), type: "file" };
  }
  throw new Error(`The tar entry ${fullName} is neither a file nor a directory (type ${flag}).`);
}

function text(header: Buffer, offset: number, length: number): string {
  const field = header.subarray(offset, offset + length);
  const end = field.indexOf(0);
  return field.subarray(0, end === -1 ? length : end).toString("utf8");
}

function octal(header: Buffer, offset: number, length: number): number {
  const digits = text(header, offset, length).trim();
  if (!/^[0-7]+$/.test(digits)) throw new Error("A tar header holds a number that is not octal.");
  return Number.parseInt(digits, 8);
}

function entryPath(root: string, name: string): string {
  const relative = name.replace(/^\/+/, "");
  const target = resolve(join(root, relative));
  if (target !== root && !target.startsWith(root + sep)) {
    throw new Error(`The tar entry ${name} would be written outside ${root}.`);
  }
  return target;
}

async function readExactly(
  archive: FileHandle,
  buffer: Buffer,
  length: number,
  position: number,
): Promise<void> {
  let done = 0;
  while (done < length) {
    const { bytesRead } = await archive.read(buffer, done, length - done, position + done);
    if (bytesRead === 0) throw new Error("The tar archive ends in the middle of an entry.");
    done += bytesRead;
  }
}

async function copyRange(
  archive: FileHandle,
  position: number,
  size: number,
  target: string,
  buffer: Buffer,
): Promise<void> {
  const output = await open(target, "wx", 0o600);
  try {
    for (let copied = 0; copied < size; ) {
      const length = Math.min(buffer.length, size - copied);
      await readExactly(archive, buffer, length, position + copied);
      await output.write(buffer, 0, length);
      copied += length;
    }
  } finally {
    await output.close();
  }
}
