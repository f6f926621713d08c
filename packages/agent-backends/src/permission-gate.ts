import { errorMessage } from "@deckhand/errors";
import type { PermissionOptionKind } from "@deckhand/wire";
import type {
  PermissionMemory,
  PermissionMemoryKey,
  RememberedPermission,
} from "./permission-memory.ts";

/** The user's answer to a permission request, or `cancelled` when none came. */
export type PermissionOutcome = PermissionOptionKind | "cancelled";

/** Where the gate reports a memory that failed; the request is still answered. */
export interface PermissionGateLogger {
  warn(message: string, fields?: Record<string, unknown>): void;
}

export interface PermissionGateInput {
  memory: PermissionMemory;
  key: PermissionMemoryKey;
  /**
   * Asks the user and resolves with the answer (`cancelled` when the request was cancelled or
   * the turn interrupted). Called only when no usable answer is remembered; a rejection
   * passes through the gate and nothing is remembered.
   */
  ask: () => Promise<PermissionOutcome>;
  /**
   * Whether a remembered answer can answer this request: an ACP agent may offer no option
   * with that meaning, and then the user is asked. Every remembered answer is usable when
   * omitted.
   */
  usable?: (remembered: RememberedPermission) => boolean;
  logger?: PermissionGateLogger;
  /** Added to the gate's log lines (the native agent adds its `session_id`). */
  logFields?: Record<string, unknown>;
}

export interface PermissionDecision {
  outcome: PermissionOutcome;
  /** True when the answer came from the memory and the user was not asked. */
  remembered: boolean;
}

function isRemembered(outcome: PermissionOutcome): outcome is RememberedPermission {
  return outcome === "allow_always" || outcome === "reject_always";
}

/**
 * Recall → ask → remember, the one way both backends decide a permission request: a
 * remembered "always" answer for `key` answers without asking; otherwise the user is asked,
 * and an `allow_always`/`reject_always` answer is stored for the next request with the same
 * key. Once-answers and `cancelled` are never stored. A memory that cannot be read means
 * asking, and one that cannot be written still lets this answer stand (later requests ask
 * again): a broken store must not block or silently decide a request.
 */
export async function decidePermission(input: PermissionGateInput): Promise<PermissionDecision> {
  const { memory, key, logger, logFields } = input;
  let remembered: RememberedPermission | null = null;
  try {
    remembered = await memory.get(key);
  } catch (error) {
    logger?.warn("cannot read remembered permissions; asking the user", {
      ...logFields,
      error: errorMessage(error),
    });
  }
  if (remembered !== null && (input.usable?.(remembered) ?? true)) {
    return { outcome: remembered, remembered: true };
  }
  const outcome = await input.ask();
  if (isRemembered(outcome)) {
    try {
      await memory.set(key, outcome);
    } catch (error) {
      logger?.warn("cannot remember a permission answer", {
        ...logFields,
        error: errorMessage(error),
      });
    }
  }
  return { outcome, remembered: false };
}
