import { DeckhandError } from "@deckhand/wire";

/** Stable codes callers may branch on; the message is for people and may change. */
export type DbErrorCode =
  | "invalid_options"
  | "connection_failed"
  | "data_dir_locked"
  | "migration_failed"
  | "closed"
  | "invalid_channel"
  | "task_type_unknown"
  | "task_type_duplicate"
  | "task_payload_invalid"
  | "worker_stopped";

/** The one error type @deckhand/db throws. */
export class DbError extends DeckhandError<DbErrorCode> {
  static override readonly errorName = "DbError";
}
