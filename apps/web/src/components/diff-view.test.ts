import { parseDiff } from "react-diff-view";
import { describe, expect, it } from "vitest";
import { fileHeading } from "./diff-view.tsx";

function headingOf(diff: string) {
  return fileHeading(parseDiff(diff)[0]!);
}

describe("fileHeading", () => {
  it("names a changed file by its path", () => {
    expect(
      headingOf(
        "diff --git a/src/app.ts b/src/app.ts\nindex 1..2 100644\n--- a/src/app.ts\n+++ b/src/app.ts\n@@ -1 +1 @@\n-a\n+b\n",
      ),
    ).toEqual({ path: "src/app.ts", change: null });
  });

  it("says a file was added or deleted, never naming /dev/null", () => {
    expect(
      headingOf(
        "diff --git a/NEW.md b/NEW.md\nnew file mode 100644\n--- /dev/null\n+++ b/NEW.md\n@@ -0,0 +1 @@\n+hi\n",
      ),
    ).toEqual({ path: "NEW.md", change: "added" });
    expect(
      headingOf(
        "diff --git a/OLD.md b/OLD.md\ndeleted file mode 100644\n--- a/OLD.md\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n",
      ),
    ).toEqual({ path: "OLD.md", change: "deleted" });
  });

  it("shows both paths of a rename", () => {
    expect(
      headingOf(
        "diff --git a/a.txt b/b.txt\nsimilarity index 90%\nrename from a.txt\nrename to b.txt\n--- a/a.txt\n+++ b/b.txt\n@@ -1 +1 @@\n-x\n+y\n",
      ),
    ).toEqual({ path: "a.txt → b.txt", change: "renamed" });
  });
});
