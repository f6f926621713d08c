import { PatchParseError } from "../../errors.ts";

/** One `@@` hunk of an update: the lines it expects (`oldLines`) and what replaces them. */
export interface UpdateChunk {
  /** The text after `@@ `: a line to find first, narrowing where the hunk may match. */
  context: string | null;
  oldLines: string[];
  newLines: string[];
  /**
   * For each of `newLines`, the index in `oldLines` of the same context line, or null for an
   * added line: a context line matched loosely keeps the file's own spelling of it.
   */
  newLineSources: (number | null)[];
  /** `*** End of File` followed the hunk: it must match at the end of the file. */
  isEndOfFile: boolean;
  /** 1-based line of the hunk's first line in the patch text, for error messages. */
  line: number;
}

export type PatchOperation =
  | { kind: "add"; path: string; contents: string; line: number }
  | { kind: "delete"; path: string; line: number }
  | { kind: "update"; path: string; moveTo: string | null; chunks: UpdateChunk[]; line: number };

export const PatchMarker = {
  begin: "*** Begin Patch",
  end: "*** End Patch",
  addFile: "*** Add File: ",
  deleteFile: "*** Delete File: ",
  updateFile: "*** Update File: ",
  moveTo: "*** Move to: ",
  endOfFile: "*** End of File",
  hunk: "@@",
} as const;

interface PatchLine {
  text: string;
  number: number;
}

const HEREDOC_START = /^(?:apply_patch\s+)?<<\s*(['"]?)([A-Za-z_][A-Za-z0-9_]*)\1$/;

function quoted(text: string): string {
  return JSON.stringify(text.length > 120 ? `${text.slice(0, 120)}…` : text);
}

/**
 * The lines of a patch with their 1-based numbers, leading and trailing blank lines dropped
 * and a heredoc wrapper (`<<'EOF'` … `EOF`) unwrapped, since models often send the patch as
 * they would type it into a shell.
 */
function patchLines(text: string): PatchLine[] {
  const lines = text.split("\n").map((line, index) => ({
    // A CRLF patch is the same patch; Codex drops the `\r` the same way.
    text: line.endsWith("\r") ? line.slice(0, -1) : line,
    number: index + 1,
  }));
  let start = 0;
  let end = lines.length;
  while (start < end && lines[start]!.text.trim() === "") start += 1;
  while (end > start && lines[end - 1]!.text.trim() === "") end -= 1;
  const heredoc = start < end ? HEREDOC_START.exec(lines[start]!.text.trim()) : null;
  if (heredoc !== null && end - start >= 2 && lines[end - 1]!.text.trim() === heredoc[2]) {
    start += 1;
    end -= 1;
  }
  return lines.slice(start, end);
}

/** Whether a trimmed header line is `marker`, also when nothing follows its colon. */
function isHeader(header: string, marker: string): boolean {
  return header.startsWith(marker.trimEnd());
}

function headerPath(line: PatchLine, marker: string): string {
  const path = line.text.trim().slice(marker.trimEnd().length).trim();
  if (path.length === 0) {
    throw new PatchParseError(line.number, `expected a file path after '${marker.trim()}'`);
  }
  return path;
}

/**
 * Parses a patch in the Codex apply_patch format. Throws PatchParseError naming the line and
 * what was expected there; never anything else.
 */
export function parsePatch(text: string): PatchOperation[] {
  const lines = patchLines(text);
  const first = lines[0];
  if (first === undefined) {
    throw new PatchParseError(1, `the patch is empty; expected '${PatchMarker.begin}'`);
  }
  if (first.text.trim() !== PatchMarker.begin) {
    throw new PatchParseError(
      first.number,
      `expected '${PatchMarker.begin}' as the first line, found ${quoted(first.text)}`,
    );
  }
  const last = lines[lines.length - 1]!;
  if (lines.length < 2 || last.text.trim() !== PatchMarker.end) {
    throw new PatchParseError(
      last.number,
      `expected '${PatchMarker.end}' as the last line, found ${lines.length < 2 ? "the end of the patch" : quoted(last.text)}`,
    );
  }
  const body = lines.slice(1, -1);
  const operations: PatchOperation[] = [];
  let index = 0;
  while (index < body.length) {
    const line = body[index]!;
    const header = line.text.trim();
    if (header === "") {
      index += 1;
      continue;
    }
    if (isHeader(header, PatchMarker.addFile)) {
      const path = headerPath(line, PatchMarker.addFile);
      index += 1;
      let contents = "";
      while (index < body.length && body[index]!.text.startsWith("+")) {
        contents += `${body[index]!.text.slice(1)}\n`;
        index += 1;
      }
      operations.push({ kind: "add", path, contents, line: line.number });
      continue;
    }
    if (isHeader(header, PatchMarker.deleteFile)) {
      operations.push({
        kind: "delete",
        path: headerPath(line, PatchMarker.deleteFile),
        line: line.number,
      });
      index += 1;
      continue;
    }
    if (isHeader(header, PatchMarker.updateFile)) {
      const path = headerPath(line, PatchMarker.updateFile);
      index += 1;
      let moveTo: string | null = null;
      const next = body[index];
      if (next !== undefined && isHeader(next.text.trim(), PatchMarker.moveTo)) {
        moveTo = headerPath(next, PatchMarker.moveTo);
        index += 1;
      }
      const parsed = parseChunks(body, index, path, line.number);
      index = parsed.next;
      operations.push({ kind: "update", path, moveTo, chunks: parsed.chunks, line: line.number });
      continue;
    }
    throw new PatchParseError(
      line.number,
      `expected '${PatchMarker.addFile}<path>', '${PatchMarker.deleteFile}<path>', '${PatchMarker.updateFile}<path>' or '${PatchMarker.end}', found ${quoted(line.text)}`,
    );
  }
  return operations;
}

function parseChunks(
  body: PatchLine[],
  start: number,
  path: string,
  headerLine: number,
): { chunks: UpdateChunk[]; next: number } {
  const chunks: UpdateChunk[] = [];
  let index = start;
  while (index < body.length) {
    const line = body[index]!;
    if (line.text.trim() === "") {
      index += 1;
      continue;
    }
    if (line.text.startsWith("***")) break;
    let context: string | null = null;
    if (line.text.trim() === PatchMarker.hunk) {
      index += 1;
    } else if (line.text.startsWith(`${PatchMarker.hunk} `)) {
      context = line.text.slice(PatchMarker.hunk.length + 1);
      index += 1;
    } else if (chunks.length > 0) {
      // Only the first hunk may leave out its `@@` line, as Codex allows.
      throw new PatchParseError(
        line.number,
        `expected '@@' or '@@ <context line>' to start the next hunk of ${path}, or a '***' file header, found ${quoted(line.text)}`,
      );
    }
    const chunk: UpdateChunk = {
      context,
      oldLines: [],
      newLines: [],
      newLineSources: [],
      isEndOfFile: false,
      line: line.number,
    };
    let changeLines = 0;
    while (index < body.length) {
      const current = body[index]!;
      if (current.text.trimEnd() === PatchMarker.endOfFile) {
        if (changeLines === 0) {
          throw new PatchParseError(
            current.number,
            `the hunk of ${path} starting at line ${chunk.line} has no lines before '${PatchMarker.endOfFile}'`,
          );
        }
        chunk.isEndOfFile = true;
        index += 1;
        break;
      }
      const marker = current.text[0];
      if (marker === undefined || marker === " ") {
        const text = current.text.slice(1);
        chunk.newLineSources.push(chunk.oldLines.length);
        chunk.oldLines.push(text);
        chunk.newLines.push(text);
      } else if (marker === "-") {
        chunk.oldLines.push(current.text.slice(1));
      } else if (marker === "+") {
        chunk.newLineSources.push(null);
        chunk.newLines.push(current.text.slice(1));
      } else if (changeLines === 0) {
        throw new PatchParseError(
          current.number,
          `expected a hunk line of ${path} starting with ' ' (context), '-' (removed) or '+' (added), found ${quoted(current.text)}`,
        );
      } else {
        break;
      }
      changeLines += 1;
      index += 1;
    }
    if (changeLines === 0) {
      const at = body[index];
      throw new PatchParseError(
        at?.number ?? chunk.line,
        `the hunk of ${path} starting at line ${chunk.line} is empty; expected lines starting with ' ', '-' or '+'`,
      );
    }
    chunks.push(chunk);
  }
  if (chunks.length === 0) {
    throw new PatchParseError(
      headerLine,
      `'${PatchMarker.updateFile}${path}' has no hunks; add '@@' hunks, or remove the update`,
    );
  }
  return { chunks, next: index };
}

/** Every path a patch touches, destinations of moves included, in order of appearance. */
export function patchPaths(operations: readonly PatchOperation[]): string[] {
  const paths: string[] = [];
  for (const operation of operations) {
    paths.push(operation.path);
    if (operation.kind === "update" && operation.moveTo !== null) paths.push(operation.moveTo);
  }
  return [...new Set(paths)];
}
