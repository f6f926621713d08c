import {
  type PermissionMemory,
  type PermissionMemoryKey,
  type RememberedPermission,
  storedToolKind,
} from "@deckhand/agent-backends";
import { type Database, permissionRules } from "@deckhand/db";
import { and, eq } from "drizzle-orm";

/**
 * "Always" permission answers in `permission_rules`: they outlive the agent process and
 * restarts. A key narrowed to one command is stored under `storedToolKind` (the kind and the
 * command's hash), in the same column as whole-kind answers.
 */
export class DbPermissionMemory implements PermissionMemory {
  readonly #db: Database;

  constructor(db: Database) {
    this.#db = db;
  }

  async get(key: PermissionMemoryKey): Promise<RememberedPermission | null> {
    const [row] = await this.#db
      .select({ answer: permissionRules.answer })
      .from(permissionRules)
      .where(
        and(
          eq(permissionRules.sessionId, key.sessionId),
          eq(permissionRules.agentType, key.agent),
          eq(permissionRules.toolKind, storedToolKind(key)),
        ),
      );
    return row?.answer ?? null;
  }

  async set(key: PermissionMemoryKey, answer: RememberedPermission): Promise<void> {
    await this.#db
      .insert(permissionRules)
      .values({
        sessionId: key.sessionId,
        agentType: key.agent,
        toolKind: storedToolKind(key),
        answer,
      })
      .onConflictDoUpdate({
        target: [permissionRules.sessionId, permissionRules.agentType, permissionRules.toolKind],
        set: { answer, updatedAt: new Date() },
      });
  }
}
