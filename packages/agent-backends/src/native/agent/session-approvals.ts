import type { PermissionOptionKind } from "@deckhand/wire";
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

function key(scope: ApprovalScope): string {
  return scope.type === "command" ? `command:${scope.command}` : `kind:${scope.kind}`;
}

/** The session's remembered "allow always" and "reject always" answers. */
export class SessionApprovals {
  readonly #answers = new Map<string, "allow" | "reject">();

  /** A remembered answer for a call that would ask, or null to ask the user. */
  remembered(scope: ApprovalScope): "allow" | "reject" | null {
    return this.#answers.get(key(scope)) ?? null;
  }

  /** Remembers an answer when it is an "always" one; once-answers leave nothing behind. */
  remember(scope: ApprovalScope, outcome: PermissionOptionKind): void {
    if (outcome === "allow_always") this.#answers.set(key(scope), "allow");
    else if (outcome === "reject_always") this.#answers.set(key(scope), "reject");
  }

  /** Commands allowed for the session, in the form `assessCommand` compares. */
  approvedCommands(): Set<string> {
    const commands = new Set<string>();
    for (const [entry, answer] of this.#answers) {
      if (answer === "allow" && entry.startsWith("command:")) commands.add(entry.slice(8));
    }
    return commands;
  }

  clear(): void {
    this.#answers.clear();
  }
}
