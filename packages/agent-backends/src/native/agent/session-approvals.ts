import type { PermissionMemoryKey } from "../../permission-memory.ts";
import { withoutTrailingBackground } from "../safety/shell-words.ts";
import { looseArguments, type ToolKind, toolKind } from "./tool-presentation.ts";

/**
 * What an "always" answer covers: one exact command for execute (allowing `rm -rf build` once
 * and for all says nothing about `rm -rf /`), the whole tool kind for everything else (allowing
 * edits always means edits to any file inside the worktree).
 */
export type ApprovalScope = { type: "command"; command: string } | { type: "kind"; kind: ToolKind };

export function approvalScope(name: string, rawArguments: unknown): ApprovalScope {
  if (name === "execute") {
    const command = looseArguments(rawArguments).command;
    if (typeof command === "string") {
      // The same normalisation the safety assessment applies, so `cmd &` and `cmd` match.
      return { type: "command", command: withoutTrailingBackground(command) ?? command };
    }
  }
  return { type: "kind", kind: toolKind(name) };
}

/**
 * Where the answer for `scope` is kept in a PermissionMemory: the native agent's answers share
 * the store (and the database table) with ACP agents' answers, an `execute` answer narrowed to
 * its command.
 */
export function permissionMemoryKey(
  scope: ApprovalScope,
  owner: { sessionId: string; agent: string },
): PermissionMemoryKey {
  return scope.type === "command"
    ? { ...owner, toolKind: "execute", subject: scope.command }
    : { ...owner, toolKind: scope.kind };
}
