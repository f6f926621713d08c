// What the steps changed in a checkout, as git sees it: everything is staged (`git add -A`) and
// compared with the base commit, so each step's diff holds the changes of all steps so far, as in
// src-cli. The list of files comes from the same comparison, in the same order as the diff's
// file sections, so a diff can later be split per file without parsing its headers.
import type { TemplateChangedFiles } from "@deckhand/batch-spec";
import { repositoryGit } from "./repository-git.ts";

export type ChangedFileStatus = "added" | "modified" | "deleted" | "renamed";

export interface ChangedFile {
  /** The path after the change, relative to the repository root. */
  path: string;
  /** The path before a rename. */
  previousPath?: string;
  status: ChangedFileStatus;
  /** Lines added and removed; 0 for binary files. */
  insertions: number;
  deletions: number;
}

export interface WorkspaceDiff {
  /** `git diff --binary --full-index` against the base commit; "" when nothing changed. */
  diff: string;
  /** One entry per file section of `diff`, in the same order. */
  files: ChangedFile[];
}

// Rename detection is asked for explicitly (not left to diff.renames) so the diff and the file
// list always agree on whether a moved file is one section or two.
const comparison = ["--cached", "-M", "--no-color", "--no-ext-diff"];
const prefixes = ["--src-prefix=a/", "--dst-prefix=b/"];
// A diff is kept whole (it becomes the changeset); bounded only so a runaway step cannot exhaust memory.
const maximumDiffBytes = 512 * 1024 * 1024;

/** Stages every change in the checkout and returns the diff against `baseRevision`. */
export async function collectWorkspaceDiff(
  checkoutDirectory: string,
  baseRevision: string,
  signal?: AbortSignal,
): Promise<WorkspaceDiff> {
  const what = `collecting the changes in ${checkoutDirectory}`;
  await repositoryGit(checkoutDirectory, ["add", "-A"], what, { writes: true, signal });
  // One git process for the file list, the line counts and the patch (a step used to pay for
  // three): with -z, `--raw` and `--numstat` records come first, NUL-terminated, then one empty
  // record, then the patch as `git diff` prints it.
  const { stdout } = await repositoryGit(
    checkoutDirectory,
    [
      "diff",
      ...comparison,
      "--raw",
      "--numstat",
      "-z",
      "--patch",
      // a/ and b/ whatever diff.noprefix or diff.mnemonicPrefix say: `git apply` expects them.
      "--binary",
      "--full-index",
      ...prefixes,
      baseRevision,
    ],
    what,
    { signal, maxOutputBytes: maximumDiffBytes },
  );
  return parseCombinedDiff(stdout);
}

/** Reads NUL-terminated records from the start of git's -z output. */
class Records {
  position = 0;
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
  next(): string {
    const end = this.text.indexOf("\0", this.position);
    if (end < 0) throw new Error("git diff -z output ended inside a record");
    const record = this.text.slice(this.position, end);
    this.position = end + 1;
    return record;
  }
}

/** Splits `git diff --raw --numstat -z --patch` output into the file list and the patch. */
export function parseCombinedDiff(output: string): WorkspaceDiff {
  if (output === "") return { diff: "", files: [] };
  const records = new Records(output);
  const files: ChangedFile[] = [];
  // `--raw -z`: ":mode mode sha sha STATUS\0path\0", renames and copies with a second path.
  while (output.startsWith(":", records.position)) {
    const letter = records.next().split(" ").at(-1)?.[0];
    if (letter === "R" || letter === "C") {
      const previousPath = records.next();
      files.push({
        status: letter === "R" ? "renamed" : "added",
        previousPath,
        path: records.next(),
        insertions: 0,
        deletions: 0,
      });
    } else {
      const status = letter === "A" ? "added" : letter === "D" ? "deleted" : "modified";
      files.push({ status, path: records.next(), insertions: 0, deletions: 0 });
    }
  }
  // `--numstat -z`: "added\tdeleted\tpath\0", or for a rename "added\tdeleted\t\0old\0new\0".
  for (const file of files) {
    const [added, deleted, path] = records.next().split("\t");
    if (path === "") {
      records.next();
      records.next();
    }
    // Binary files count "-" lines.
    file.insertions = added === "-" ? 0 : Number(added);
    file.deletions = deleted === "-" ? 0 : Number(deleted);
  }
  // The empty record between the summary and the patch.
  if (records.position < output.length) records.next();
  return { diff: output.slice(records.position), files };
}

/** The file lists templates see as `modified_files`, `added_files`, …. */
export function templateChangedFiles(files: readonly ChangedFile[]): TemplateChangedFiles {
  const pick = (status: ChangedFileStatus) =>
    files.filter((file) => file.status === status).map((file) => file.path);
  return {
    modified: pick("modified"),
    added: pick("added"),
    deleted: pick("deleted"),
    renamed: pick("renamed"),
  };
}

/**
 * The diff's file sections, in order. A section starts at a line beginning with `diff --git `;
 * inside a section every line starts with a diff marker, so such a line cannot be content.
 */
export function splitDiffSections(diff: string): string[] {
  if (diff === "") return [];
  const starts: number[] = [];
  if (diff.startsWith("diff --git ")) starts.push(0);
  for (
    let at = diff.indexOf("\ndiff --git ");
    at >= 0;
    at = diff.indexOf("\ndiff --git ", at + 1)
  ) {
    starts.push(at + 1);
  }
  return starts.map((start, index) => diff.slice(start, starts[index + 1] ?? diff.length));
}

/** Applies a stored diff to a clean checkout at its base commit (resuming from a cached step). */
export async function applyWorkspaceDiff(
  checkoutDirectory: string,
  diff: string,
  signal?: AbortSignal,
): Promise<void> {
  if (diff === "") return;
  await repositoryGit(
    checkoutDirectory,
    ["apply", "--binary", "--index", "--whitespace=nowarn", "-"],
    `applying the cached changes in ${checkoutDirectory}`,
    { writes: true, signal, input: diff },
  );
}
