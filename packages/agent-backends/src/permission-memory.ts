import type { ToolKindSchema } from "@deckhand/wire";
import type { z } from "zod";

/** An ACP tool kind (`edit`, `execute`, ...); permission answers are remembered per kind. */
export type AcpToolKind = z.infer<typeof ToolKindSchema>;

/** Whose answer it is: a Deckhand session, an agent in it, and the kind of tool asking. */
export interface PermissionMemoryKey {
  sessionId: string;
  agent: string;
  toolKind: AcpToolKind;
}

/** An answer that holds beyond the request it was given for. */
export type RememberedPermission = "allow_always" | "reject_always";

/**
 * Where "always" answers live. The backend asks before showing a request and stores an
 * `allow_always`/`reject_always` answer when the user gives one; the server backs this with
 * the database so the answer survives restarts and is shared by every chat of the session.
 */
export interface PermissionMemory {
  get(key: PermissionMemoryKey): Promise<RememberedPermission | null>;
  set(key: PermissionMemoryKey, answer: RememberedPermission): Promise<void>;
}

function keyText(key: PermissionMemoryKey): string {
  return JSON.stringify([key.sessionId, key.agent, key.toolKind]);
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
