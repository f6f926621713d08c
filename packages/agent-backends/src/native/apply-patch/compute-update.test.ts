import { describe, expect, it } from "vitest";
import { AgentBackendError } from "../../errors.ts";
import { applyChunks } from "./compute-update.ts";
import { parsePatch } from "./parse-patch.ts";

function update(original: string, hunks: string): string {
  const [operation] = parsePatch(
    `*** Begin Patch\n*** Update File: f.txt\n${hunks}\n*** End Patch`,
  );
  if (operation?.kind !== "update") throw new Error("not an update");
  return applyChunks(original, operation.chunks, "f.txt");
}

describe("applyChunks", () => {
  it("replaces matched lines and keeps the rest", () => {
    expect(update("a\nb\nc\n", "@@\n a\n-b\n+B\n c")).toBe("a\nB\nc\n");
  });

  it("uses the @@ context line to choose between repeated blocks", () => {
    const original = "fn one\n  x\nfn two\n  x\n";
    expect(update(original, "@@ fn two\n-  x\n+  y")).toBe("fn one\n  x\nfn two\n  y\n");
  });

  it("matches ignoring trailing whitespace, then surrounding whitespace, then typography, keeping the file's context lines", () => {
    expect(update("a  \nb\n", "@@\n a\n-b\n+c")).toBe("a  \nc\n");
    expect(update("    a\nb\n", "@@\n a\n-b\n+c")).toBe("    a\nc\n");
    expect(update("  x\n  y\n", "@@\n x\n- y\n+ z")).toBe("  x\n z\n");
    expect(update("say “hi” — now\n", '@@\n-say "hi" - now\n+bye')).toBe("bye\n");
  });

  it("anchors an End of File hunk at the end", () => {
    expect(update("x\ny\nx\n", "@@\n-x\n+z\n*** End of File")).toBe("x\ny\nz\n");
  });

  it("appends a hunk with only added lines and always ends with a newline", () => {
    expect(update("a", "@@\n+b")).toBe("a\nb\n");
  });

  it("applies several hunks in order", () => {
    expect(update("1\n2\n3\n4\n5\n", "@@\n-2\n+two\n@@\n-4\n+four")).toBe("1\ntwo\n3\nfour\n5\n");
  });

  it("refuses a hunk that does not match, naming it", () => {
    expect(() => update("a\nb\n", "@@\n-zzz\n+y")).toThrowError(
      expect.objectContaining({
        code: "patch_mismatch",
        message: expect.stringMatching(/hunk 1 of the update to f.txt \(patch line 3\).*\|zzz/s),
      }),
    );
    expect(() => update("a\nb\n", "@@ nowhere\n-a\n+y")).toThrowError(AgentBackendError);
  });

  it("refuses a hunk that would only match before the previous one", () => {
    expect(() => update("a\nb\n", "@@\n-b\n+B\n@@\n-a\n+A")).toThrowError(/after line 2/);
  });
});
