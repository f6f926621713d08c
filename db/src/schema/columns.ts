import type { SQL } from "drizzle-orm";
import { sql } from "drizzle-orm";
import type { AnyPgColumn } from "drizzle-orm/pg-core";
import { timestamp } from "drizzle-orm/pg-core";

/** Every timestamp is `timestamptz`: replicas and executors may run in different time zones. */
export function timestampColumn(name: string) {
  return timestamp(name, { withTimezone: true, mode: "date" });
}

export function createdAt() {
  return timestampColumn("created_at").notNull().defaultNow();
}

export function updatedAt() {
  return timestampColumn("updated_at").notNull().defaultNow();
}

/**
 * `column IN (...)` for a CHECK constraint. The values come from the `as const` arrays next to
 * each table, so the TypeScript union and the database constraint never disagree.
 */
export function oneOf(column: AnyPgColumn, values: readonly string[]): SQL {
  const quoted = values.map((value) => `'${value.replaceAll("'", "''")}'`).join(", ");
  return sql`${column} in (${sql.raw(quoted)})`;
}
