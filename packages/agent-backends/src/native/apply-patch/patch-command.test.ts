import { describe, expect, it } from "vitest";
import { parsePatch } from "./parse-patch.ts";
import { patchFromCommand } from "./patch-command.ts";

const PATCH = "*** Begin Patch\n*** Add File: a.txt\n+it's here\n*** End Patch";

describe("patchFromCommand", () => {
  it("finds the patch in a heredoc invocation", () => {
    const patch = patchFromCommand(`apply_patch <<'EOF'\n${PATCH}\nEOF\n`);
    expect(parsePatch(patch!)).toEqual([
      { kind: "add", path: "a.txt", contents: "it's here\n", line: 3 },
    ]);
  });

  it("finds the patch passed as one quoted argument", () => {
    const patch = patchFromCommand(`apply_patch '${PATCH.replaceAll("'", `'\\''`)}'`);
    expect(patch).toBe(PATCH);
  });

  it.each([
    "ls",
    "apply_patch",
    "apply_patch a b",
    'apply_patch "$PATCH"',
    "echo apply_patch <<EOF",
    "apply_patch x > out",
  ])("ignores %j", (command) => {
    expect(patchFromCommand(command)).toBeNull();
  });
});
