// What the steps changed in a checkout, as git sees it: everything is staged (`git add -A`) and
// compared with the base commit, so each step's diff holds the changes of all steps so far, as in
// src-cli. The list of files comes from the same comparison, in the same order as the diff's
// file sections, so a diff can later be split per file without parsing its headers.
import type { TemplateChangedFiles } from "@deckhand/batch-spec";
import { nulSeparated, repositoryGit } from "./repository-git.ts";

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
  /** `git diff --binary` against the base commit; "" when nothing changed. */
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
  const [diff, numstat, nameStatus] = await Promise.all(
    [
      // a/ and b/ whatever diff.noprefix or diff.mnemonicPrefix say: `git apply` expects them.
      ["diff", ...comparison, "--binary", "--full-index", ...prefixes, baseRevision],
      ["diff", ...comparison, "--numstat", "-z", baseRevision],
      ["diff", ...comparison, "--name-status", "-z", baseRevision],
    ].map(
      async (args) =>
        (
          await repositoryGit(checkoutDirectory, args, what, {
            signal,
            maxOutputBytes: maximumDiffBytes,
          })
        ).stdout,
    ),
  );
  return { diff: diff!, files: parseFiles(nameStatus!, numstat!) };
}

function parseFiles(nameStatus: string, numstat: string): ChangedFile[] {
  const files: ChangedFile[] = [];
  const names = nulSeparated(nameStatus);
  for (let index = 0; index < names.length; ) {
    const letter = names[index]![0];
    if (letter === "R" || letter === "C") {
      files.push({
        status: letter === "R" ? "renamed" : "added",
        previousPath: names[index + 1]!,
        path: names[index + 2]!,
        insertions: 0,
        deletions: 0,
      });
      index += 3;
    } else {
      const status = letter === "A" ? "added" : letter === "D" ? "deleted" : "modified";
      files.push({ status, path: names[index + 1]!, insertions: 0, deletions: 0 });
      index += 2;
    }
  }
  // `--numstat -z`: "added\tdeleted\tpath\0", or for a rename "added\tdeleted\t\0old\0new\0".
  const counts = numstat.split("\0");
  let file = 0;
  for (let index = 0; index < counts.length && file < files.length; index += 1) {
    const entry = counts[index]!;
    if (entry === "") continue;
    const [added, deleted, path] = entry.split("\t");
    if (path === "") index += 2;
    const target = files[file]!;
    // Binary files count "-" lines.
    target.insertions = added === "-" ? 0 : Number(added);
    target.deletions = deleted === "-" ? 0 : Number(deleted);
    file += 1;
  }
  return files;
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
