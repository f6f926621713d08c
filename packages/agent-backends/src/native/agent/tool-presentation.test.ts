import { describe, expect, it } from "vitest";
import { approvalScope, SessionApprovals } from "./session-approvals.ts";
import { toolKind, toolLocations, toolTitle } from "./tool-presentation.ts";

describe("tool presentation", () => {
  it("maps each native tool to the kind the UI groups it by", () => {
    expect(
      [
        "execute",
        "read_file",
        "write_file",
        "edit_file",
        "apply_patch",
        "process_output",
        "process_list",
        "process_signal",
      ].map(toolKind),
    ).toEqual(["execute", "read", "edit", "edit", "edit", "other", "other", "other"]);
  });

  it("titles a call in one line and names the files it touches", () => {
    expect(toolTitle("execute", { command: "npm test\n  -- --watch=false" })).toBe(
      "npm test -- --watch=false",
    );
    expect(toolTitle("read_file", { path: "src/a.ts" })).toBe("Read src/a.ts");
    expect(toolTitle("execute", { command: "x".repeat(500) })).toHaveLength(200);
    const patch = "*** Begin Patch\n*** Delete File: old.txt\n*** End Patch";
    expect(toolLocations("apply_patch", { patch })).toEqual(["old.txt"]);
    expect(toolLocations("execute", { command: `apply_patch <<'EOF'\n${patch}\nEOF` })).toEqual([
      "old.txt",
    ]);
    expect(toolLocations("apply_patch", { patch: "not a patch" })).toEqual([]);
  });
});

describe("session approvals", () => {
  it("remembers 'always' per exact command for execute and per kind otherwise", () => {
    const approvals = new SessionApprovals();
    const touch = approvalScope("execute", '{"command":"touch a &"}');
    expect(touch).toEqual({ type: "command", command: "touch a" });
    approvals.remember(touch, "allow_always");
    approvals.remember(approvalScope("execute", { command: "rm b" }), "reject_once");
    approvals.remember(approvalScope("write_file", { path: "x" }), "reject_always");
    expect(approvals.remembered(approvalScope("execute", { command: "touch a" }))).toBe("allow");
    expect(approvals.remembered(approvalScope("execute", { command: "touch b" }))).toBeNull();
    expect(approvals.remembered(approvalScope("execute", { command: "rm b" }))).toBeNull();
    expect(approvals.remembered(approvalScope("apply_patch", { patch: "" }))).toBe("reject");
    expect([...approvals.approvedCommands()]).toEqual(["touch a"]);
  });
});
