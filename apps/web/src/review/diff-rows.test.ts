import { describe, expect, it } from "vitest";
import { fileDiffModel } from "./diff-rows.ts";

const MODIFIED = [
  "diff --git a/notes.txt b/notes.txt",
  "index 1111111..2222222 100644",
  "--- a/notes.txt",
  "+++ b/notes.txt",
  "@@ -1,5 +1,3 @@",
  " keep",
  "-old one",
  "-old two",
  "+new one",
  " tail",
  "-gone",
  "",
].join("\n");

describe("fileDiffModel", () => {
  it("counts added and removed lines and numbers each side", () => {
    const model = fileDiffModel(MODIFIED);
    expect(model.additions).toBe(1);
    expect(model.deletions).toBe(3);
    expect(model.unified.map((row) => (row.kind === "hunk" ? "@@" : row.type))).toEqual([
      "@@",
      "normal",
      "delete",
      "delete",
      "insert",
      "normal",
      "delete",
    ]);
    expect(model.unified[4]).toMatchObject({ newNumber: 2, oldNumber: null, content: "new one" });
    expect(model.unified[6]).toMatchObject({ oldNumber: 5, newNumber: null, content: "gone" });
  });

  it("pairs a run of deletions with the insertions after it, side by side", () => {
    const pairs = fileDiffModel(MODIFIED).split.map((row) =>
      row.kind === "hunk" ? "@@" : [row.left?.content ?? null, row.right?.content ?? null],
    );
    expect(pairs).toEqual([
      "@@",
      ["keep", "keep"],
      ["old one", "new one"],
      ["old two", null],
      ["tail", "tail"],
      ["gone", null],
    ]);
  });

  it("makes one row per line of a new file", () => {
    const lines = Array.from({ length: 1000 }, (_, index) => `+${index + 1}`);
    const diff = [
      "diff --git a/big.txt b/big.txt",
      "new file mode 100644",
      "index 0000000..3333333",
      "--- /dev/null",
      "+++ b/big.txt",
      "@@ -0,0 +1,1000 @@",
      ...lines,
      "",
    ].join("\n");
    const model = fileDiffModel(diff);
    expect(model.additions).toBe(1000);
    expect(model.unified).toHaveLength(1001);
    expect(model.unified.at(-1)).toMatchObject({ newNumber: 1000, content: "1000" });
  });

  it("shows text that is no diff as no rows rather than failing", () => {
    expect(fileDiffModel("not a diff at all")).toMatchObject({ unified: [], additions: 0 });
  });
});
