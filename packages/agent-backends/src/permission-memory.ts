import { createHash } from "node:crypto";
import type { ToolKindSchema } from "@deckhand/wire";
import type { z } from "zod";

/** An ACP tool kind (`edit`, `execute`, ...); permission answers are remembered per kind. */
export type AcpToolKind = z.infer<typeof ToolKindSchema>;

/**
 * Whose answer it is: a Deckhand session, an agent in it, and the kind of tool asking; with a
 * `subject`, only the calls of that kind about that one thing.
 */
export interface PermissionMemoryKey {
  sessionId: string;
  agent: string;
  toolKind: AcpToolKind;
  /**
   * Narrows the answer to one call of the kind: the native agent remembers `execute` answers
   * per exact command (allowing `rm -rf build` always says nothing about `rm -rf /`). Absent,
   * the answer covers the whole kind, as ACP agents' answers do.
   */
  subject?: string;
}

/** An answer that holds beyond the request it was given for. */
export type RememberedPermission = "allow_always" | "reject_always";

/**
 * Where "always" answers live, for ACP agents and the native agent alike. A backend asks
 * before showing a request and stores an `allow_always`/`reject_always` answer when the user
 * gives one; the server backs this with the database so the answer survives restarts and is
 * shared by every chat of the session.
 */
export interface PermissionMemory {
  get(key: PermissionMemoryKey): Promise<RememberedPermission | null>;
  set(key: PermissionMemoryKey, answer: RememberedPermission): Promise<void>;
}

/**
 * The tool kind a key is stored under: the kind itself, or for a key with a subject the kind
 * and the subject's SHA-256 (`execute:<hex>`), which keeps stored keys short whatever the
 * command's length and apart from the whole-kind key (no kind contains a colon).
 */
export function storedToolKind(key: PermissionMemoryKey): string {
  if (key.subject === undefined) return key.toolKind;
  return `${key.toolKind}:${createHash("sha256").update(key.subject).digest("hex")}`;
}

function keyText(key: PermissionMemoryKey): string {
  return JSON.stringify([key.sessionId, key.agent, storedToolKind(key)]);
}

/** A PermissionMemory in a Map: for tests, and for a backend the server gives no memory. */
export function createInMemoryPermissionMemory(): PermissionMemory {
  const answers = new Map<string, RememberedPermission>();
  return {
    async get(key) {
      return answers.get(keyText(key)) ?? null;
    },
    async set(key, answer) {
      answers.set(keyText(key), answer);
    },
  };
}
