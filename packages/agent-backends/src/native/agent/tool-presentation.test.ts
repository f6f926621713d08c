import { describe, expect, it } from "vitest";
import { createInMemoryPermissionMemory, storedToolKind } from "../../permission-memory.ts";
import { approvalScope, permissionMemoryKey } from "./session-approvals.ts";
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
  it("keys 'always' answers per exact command for execute and per kind otherwise", async () => {
    const owner = { sessionId: "s-1", agent: "deckhand" };
    const touch = approvalScope("execute", '{"command":"touch a &"}');
    expect(touch).toEqual({ type: "command", command: "touch a" });
    expect(permissionMemoryKey(touch, owner)).toEqual({
      ...owner,
      toolKind: "execute",
      subject: "touch a",
    });
    expect(permissionMemoryKey(approvalScope("write_file", { path: "x" }), owner)).toEqual({
      ...owner,
      toolKind: "edit",
    });

    const memory = createInMemoryPermissionMemory();
    const key = (name: string, args: unknown) =>
      permissionMemoryKey(approvalScope(name, args), owner);
    await memory.set(key("execute", { command: "touch a" }), "allow_always");
    await memory.set(key("write_file", { path: "x" }), "reject_always");
    expect(await memory.get(key("execute", { command: "touch a &" }))).toBe("allow_always");
    expect(await memory.get(key("execute", { command: "touch b" }))).toBeNull();
    expect(await memory.get(key("apply_patch", { patch: "" }))).toBe("reject_always");
    // A command's answer is not the whole kind's, nor another agent's.
    expect(await memory.get({ ...owner, toolKind: "execute" })).toBeNull();
    expect(
      await memory.get({ ...key("execute", { command: "touch a" }), agent: "codex" }),
    ).toBeNull();
  });

  it("stores a command's key short and apart from its kind's, whatever the command's length", () => {
    const long = storedToolKind({
      sessionId: "s",
      agent: "a",
      toolKind: "execute",
      subject: "x".repeat(10_000),
    });
    expect(long).toMatch(/^execute:[0-9a-f]{64}$/);
    expect(storedToolKind({ sessionId: "s", agent: "a", toolKind: "execute" })).toBe("execute");
  });
});
