import { Diff, type FileData, Hunk, parseDiff } from "react-diff-view";
import "react-diff-view/style/index.css";

/** `/dev/null` stands for "no file" on one side of an added or deleted file's diff. */
const NO_FILE = "/dev/null";

/**
 * What a file's header says: its path, or both paths for a rename or copy, and what happened
 * to it (added, deleted, renamed), as GitHub's file headers do.
 */
export function fileHeading(file: Pick<FileData, "oldPath" | "newPath" | "type">): {
  path: string;
  change: string | null;
} {
  const oldPath = file.oldPath === NO_FILE ? null : file.oldPath;
  const newPath = file.newPath === NO_FILE ? null : file.newPath;
  const path = newPath ?? oldPath ?? "(unnamed file)";
  if (file.type === "add") return { path, change: "added" };
  if (file.type === "delete") return { path: oldPath ?? path, change: "deleted" };
  // A rename with changes parses as a modification: the two paths tell.
  if (oldPath && newPath && oldPath !== newPath)
    return { path: `${oldPath} → ${newPath}`, change: file.type === "copy" ? "copied" : "renamed" };
  return { path, change: null };
}

function counts(file: FileData): { added: number; removed: number } {
  let added = 0;
  let removed = 0;
  for (const hunk of file.hunks) {
    for (const change of hunk.changes) {
      if (change.type === "insert") added += 1;
      else if (change.type === "delete") removed += 1;
    }
  }
  return { added, removed };
}

/** A unified diff (as `git diff` writes it) rendered by react-diff-view, each file under its path. */
export function DiffView({ diff }: { diff: string }) {
  let files: ReturnType<typeof parseDiff>;
  try {
    files = parseDiff(diff);
  } catch {
    files = [];
  }
  if (files.length === 0) return <pre className="output">{diff}</pre>;
  return (
    <div className="diff-files">
      {files.map((file) => {
        const heading = fileHeading(file);
        const { added, removed } = counts(file);
        return (
          <section
            key={`${file.oldRevision}-${file.newRevision}-${file.oldPath}-${file.newPath}`}
            className="diff-file"
            aria-label={`Diff of ${heading.path}`}
          >
            <header className="diff-file-header">
              <span className="path">{heading.path}</span>
              {heading.change && <span className="badge">{heading.change}</span>}
              <span className="diff-stats">
                <span className="diff-stats-added">+{added}</span>{" "}
                <span className="diff-stats-deleted">−{removed}</span>
              </span>
            </header>
            <div className="diff-scroll">
              {file.hunks.length === 0 ? (
                <p className="muted">No lines to show (a binary file, or only its mode changed).</p>
              ) : (
                <Diff viewType="unified" diffType={file.type} hunks={file.hunks}>
                  {(hunks) => hunks.map((hunk) => <Hunk key={hunk.content} hunk={hunk} />)}
                </Diff>
              )}
            </div>
          </section>
        );
      })}
    </div>
  );
}

/** Whether text looks like a unified diff worth rendering as one. */
export function isUnifiedDiff(text: string): boolean {
  return /^(diff --git |--- )/m.test(text) && /^@@ /m.test(text);
}
