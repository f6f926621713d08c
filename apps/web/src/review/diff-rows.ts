import { parseDiff } from "react-diff-view";

/** One side of a diff line: which file's numbering it has, its number and its text. */
export interface DiffSide {
  type: "insert" | "delete" | "normal";
  /** The line's number in the old file (deleted and unchanged lines), else null. */
  oldNumber: number | null;
  /** The line's number in the new file (inserted and unchanged lines), else null. */
  newNumber: number | null;
  content: string;
}

export type UnifiedRow = { kind: "hunk"; header: string } | ({ kind: "line" } & DiffSide);

export type SplitRow =
  | { kind: "hunk"; header: string }
  | { kind: "pair"; left: DiffSide | null; right: DiffSide | null };

export interface FileDiffModel {
  unified: UnifiedRow[];
  split: SplitRow[];
  additions: number;
  deletions: number;
  /** The diff says the file is binary: there are no lines to show. */
  binary: boolean;
}

/**
 * The rows a reviewer sees of one file's unified diff, both as one column and side by side. In
 * the side-by-side view a run of deleted lines is paired, in order, with the inserted lines
 * that follow it, as `git diff` readers expect; unchanged lines sit on both sides.
 */
export function fileDiffModel(diff: string): FileDiffModel {
  const model: FileDiffModel = {
    unified: [],
    split: [],
    additions: 0,
    deletions: 0,
    binary: false,
  };
  let files: ReturnType<typeof parseDiff>;
  try {
    files = parseDiff(diff);
  } catch {
    files = [];
  }
  for (const file of files) {
    if (file.isBinary) model.binary = true;
    for (const hunk of file.hunks) {
      model.unified.push({ kind: "hunk", header: hunk.content });
      model.split.push({ kind: "hunk", header: hunk.content });
      let deleted: DiffSide[] = [];
      let inserted: DiffSide[] = [];
      const pairRun = () => {
        for (let index = 0; index < Math.max(deleted.length, inserted.length); index += 1)
          model.split.push({
            kind: "pair",
            left: deleted[index] ?? null,
            right: inserted[index] ?? null,
          });
        deleted = [];
        inserted = [];
      };
      for (const change of hunk.changes) {
        let side: DiffSide;
        if (change.type === "insert") {
          side = { type: "insert", oldNumber: null, newNumber: change.lineNumber, content: "" };
          model.additions += 1;
          inserted.push(side);
        } else if (change.type === "delete") {
          side = { type: "delete", oldNumber: change.lineNumber, newNumber: null, content: "" };
          model.deletions += 1;
          // A deletion after insertions starts a new run.
          if (inserted.length > 0) pairRun();
          deleted.push(side);
        } else {
          side = {
            type: "normal",
            oldNumber: change.oldLineNumber,
            newNumber: change.newLineNumber,
            content: "",
          };
          pairRun();
          model.split.push({ kind: "pair", left: side, right: side });
        }
        side.content = change.content;
        model.unified.push({ kind: "line", ...side });
      }
      pairRun();
    }
  }
  return model;
}

/** The line a comment on this side refers to: the new file's, or the old one's if deleted. */
export function commentLine(side: DiffSide): { line: number; removed: boolean } {
  return side.newNumber !== null
    ? { line: side.newNumber, removed: false }
    : { line: side.oldNumber ?? 0, removed: true };
}
