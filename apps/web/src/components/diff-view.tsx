import { Diff, Hunk, parseDiff } from "react-diff-view";
import "react-diff-view/style/index.css";

/** A unified diff (as `git diff` writes it) rendered by react-diff-view. */
export function DiffView({ diff }: { diff: string }) {
  let files: ReturnType<typeof parseDiff>;
  try {
    files = parseDiff(diff);
  } catch {
    files = [];
  }
  if (files.length === 0) return <pre className="output">{diff}</pre>;
  return (
    <div className="diff-scroll">
      {files.map((file) => (
        <Diff
          key={`${file.oldRevision}-${file.newRevision}-${file.newPath}`}
          viewType="unified"
          diffType={file.type}
          hunks={file.hunks}
        >
          {(hunks) => hunks.map((hunk) => <Hunk key={hunk.content} hunk={hunk} />)}
        </Diff>
      ))}
    </div>
  );
}

/** Whether text looks like a unified diff worth rendering as one. */
export function isUnifiedDiff(text: string): boolean {
  return /^(diff --git |--- )/m.test(text) && /^@@ /m.test(text);
}
