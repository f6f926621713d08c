import { describe, expect, it } from "vitest";
import { AgentBackendError, PatchParseError } from "../../errors.ts";
import { parsePatch, patchPaths } from "./parse-patch.ts";

function parseError(patch: string): PatchParseError {
  try {
    parsePatch(patch);
  } catch (error) {
    expect(error).toBeInstanceOf(PatchParseError);
    return error as PatchParseError;
  }
  throw new Error("the patch parsed");
}

describe("parsePatch", () => {
  it("parses every kind of operation", () => {
    const patch = [
      "*** Begin Patch",
      "*** Add File: docs/new.md",
      "+# Title",
      "+",
      "+text",
      "*** Delete File: old.txt",
      "*** Update File: src/a.ts",
      "*** Move to: src/b.ts",
      "@@ function main() {",
      " const a = 1;",
      "-const b = 2;",
      "+const b = 3;",
      "@@",
      " last",
      "+appended",
      "*** End of File",
      "*** End Patch",
    ].join("\n");
    expect(parsePatch(patch)).toEqual([
      { kind: "add", path: "docs/new.md", contents: "# Title\n\ntext\n", line: 2 },
      { kind: "delete", path: "old.txt", line: 6 },
      {
        kind: "update",
        path: "src/a.ts",
        moveTo: "src/b.ts",
        line: 7,
        chunks: [
          {
            context: "function main() {",
            oldLines: ["const a = 1;", "const b = 2;"],
            newLines: ["const a = 1;", "const b = 3;"],
            newLineSources: [0, null],
            isEndOfFile: false,
            line: 9,
          },
          {
            context: null,
            oldLines: ["last"],
            newLines: ["last", "appended"],
            newLineSources: [0, null],
            isEndOfFile: true,
            line: 13,
          },
        ],
      },
    ]);
    expect(patchPaths(parsePatch(patch))).toEqual([
      "docs/new.md",
      "old.txt",
      "src/a.ts",
      "src/b.ts",
    ]);
  });

  it("accepts a first hunk without @@, CRLF line ends, blank edges and a heredoc wrapper", () => {
    const patch =
      "\n<<'EOF'\r\n*** Begin Patch\r\n*** Update File: a.txt\r\n-x\r\n+y\r\n*** End Patch\r\nEOF\n\n";
    expect(parsePatch(patch)).toEqual([
      {
        kind: "update",
        path: "a.txt",
        moveTo: null,
        line: 4,
        chunks: [
          {
            context: null,
            oldLines: ["x"],
            newLines: ["y"],
            newLineSources: [null],
            isEndOfFile: false,
            line: 5,
          },
        ],
      },
    ]);
  });

  it("treats an empty line inside a hunk as an empty context line", () => {
    const [update] = parsePatch("*** Begin Patch\n*** Update File: a\n@@\n a\n\n-b\n*** End Patch");
    expect(update).toMatchObject({ chunks: [{ oldLines: ["a", "", "b"], newLines: ["a", ""] }] });
  });

  it.each([
    ["", 1, /expected '\*\*\* Begin Patch'/],
    ["hello\n*** End Patch", 1, /expected '\*\*\* Begin Patch' as the first line, found "hello"/],
    ["*** Begin Patch\n*** Add File: a\n+x", 3, /expected '\*\*\* End Patch' as the last line/],
    ["*** Begin Patch", 1, /expected '\*\*\* End Patch'.*end of the patch/],
    ["*** Begin Patch\n*** Frobnicate: a\n*** End Patch", 2, /expected '\*\*\* Add File: <path>'/],
    ["*** Begin Patch\n*** Add File:   \n*** End Patch", 2, /expected a file path/],
    ["*** Begin Patch\n*** Update File: a\n*** End Patch", 2, /has no hunks/],
    [
      "*** Begin Patch\n*** Update File: a\n@@\n*** End Patch",
      3,
      /hunk of a starting at line 3 is empty/,
    ],
    [
      "*** Begin Patch\n*** Update File: a\n@@\nnope\n*** End Patch",
      4,
      /starting with ' ' \(context\)/,
    ],
    [
      "*** Begin Patch\n*** Update File: a\n@@\n-x\n+y\nstray\n*** End Patch",
      6,
      /expected '@@' or '@@ <context line>' to start the next hunk of a/,
    ],
    [
      "*** Begin Patch\n*** Update File: a\n@@\n*** End of File\n*** End Patch",
      4,
      /no lines before/,
    ],
  ])("reports %j at line %i", (patch, line, message) => {
    const error = parseError(patch);
    expect(error.line).toBe(line);
    expect(error.code).toBe("patch_parse_failed");
    expect(error).toBeInstanceOf(AgentBackendError);
    expect(error.message).toMatch(message);
    expect(error.message).toContain(`line ${line}:`);
  });
});
