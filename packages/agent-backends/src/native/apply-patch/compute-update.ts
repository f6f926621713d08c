import { AgentBackendError } from "../../errors.ts";
import type { UpdateChunk } from "./parse-patch.ts";
import { seekSequence } from "./seek-sequence.ts";

interface Replacement {
  start: number;
  removed: number;
  inserted: string[];
}

function describeLines(lines: readonly string[]): string {
  const shown = lines.slice(0, 20).map((line) => `  |${line}`);
  if (lines.length > 20) shown.push(`  … ${lines.length - 20} more lines`);
  return shown.join("\n");
}

/**
 * Applies an update's hunks to `original`, as Codex does: hunks are matched in order, each
 * after the previous one, and the result ends with a newline unless it is empty. Throws AgentBackendError
 * `patch_mismatch` naming the hunk that does not fit.
 */
export function applyChunks(
  original: string,
  chunks: readonly UpdateChunk[],
  path: string,
): string {
  const lines = original.split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  const replacements: Replacement[] = [];
  let lineIndex = 0;
  for (const [chunkIndex, chunk] of chunks.entries()) {
    const where = `hunk ${chunkIndex + 1} of the update to ${path} (patch line ${chunk.line})`;
    if (chunk.context !== null) {
      const found = seekSequence(lines, [chunk.context], lineIndex, false);
      if (found === null) {
        throw new AgentBackendError(
          "patch_mismatch",
          `${where}: cannot find its context line '@@ ${chunk.context}' in ${path}${lineIndex > 0 ? ` after line ${lineIndex}` : ""}; read the file again and copy the line exactly. No file was changed.`,
        );
      }
      lineIndex = found + 1;
    }
    if (chunk.oldLines.length === 0) {
      // A hunk that only adds lines appends them, before a final blank line if there is one.
      const at = lines[lines.length - 1] === "" ? lines.length - 1 : lines.length;
      replacements.push({ start: at, removed: 0, inserted: chunk.newLines });
      continue;
    }
    let pattern = chunk.oldLines;
    let newCount = chunk.newLines.length;
    let found = seekSequence(lines, pattern, lineIndex, chunk.isEndOfFile);
    if (found === null && pattern[pattern.length - 1] === "") {
      // A trailing empty context line usually stands for the file's final newline.
      pattern = pattern.slice(0, -1);
      if (chunk.newLines[newCount - 1] === "") newCount -= 1;
      found = seekSequence(lines, pattern, lineIndex, chunk.isEndOfFile);
    }
    if (found === null) {
      throw new AgentBackendError(
        "patch_mismatch",
        `${where}: these lines were not found in ${path}${lineIndex > 0 ? ` after line ${lineIndex}` : ""}${chunk.isEndOfFile ? " at the end of the file" : ""}:\n${describeLines(chunk.oldLines)}\nRead the file again and copy the context and removed lines exactly. No file was changed.`,
      );
    }
    const at = found;
    // Unlike Codex, a context line matched loosely (say, by its trimmed text) is kept as the
    // file has it, so a patch never reindents lines it does not change.
    const inserted = chunk.newLines.slice(0, newCount).map((text, index) => {
      const source = chunk.newLineSources[index];
      return source !== null && source !== undefined && source < pattern.length
        ? lines[at + source]!
        : text;
    });
    replacements.push({ start: found, removed: pattern.length, inserted });
    lineIndex = found + pattern.length;
  }
  replacements.sort((a, b) => a.start - b.start);
  for (const replacement of replacements.reverse()) {
    lines.splice(replacement.start, replacement.removed, ...replacement.inserted);
  }
  // Codex drops a final empty line here (it reuses it as the newline); every line is kept.
  return lines.length === 0 ? "" : `${lines.join("\n")}\n`;
}
