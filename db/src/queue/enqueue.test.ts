import { randomUUID } from "node:crypto";
import { asc, eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { backends, openTestDatabase, type TestDatabase } from "../../test/database-fixtures.ts";
import { tasks } from "../schema/tasks.ts";
import { enqueue, enqueueAll } from "./enqueue.ts";

describe.each(backends)("enqueueAll on %s", (kind) => {
  let database: TestDatabase;

  beforeAll(async () => {
    database = await openTestDatabase(kind);
  });
  afterAll(async () => {
    await database?.dispose();
  });

  it("adds the tasks in the order given, with their serial keys, skipping keys that exist", async () => {
    const type = `test.${randomUUID()}`;
    const existing = `key-${randomUUID()}`;
    await enqueue(database.handle.db, { type, idempotencyKey: existing, payload: { n: -1 } });
    const added = await database.handle.db.transaction((transaction) =>
      enqueueAll(
        transaction,
        [0, 1, 2, 3].map((n) => ({
          type,
          payload: { n },
          idempotencyKey: n === 2 ? existing : `key-${randomUUID()}`,
          maxAttempts: 3,
          serialKey: `lane-${n % 2}`,
        })),
      ),
    );
    expect(added).toBe(3);
    const rows = await database.handle.db
      .select()
      .from(tasks)
      .where(eq(tasks.type, type))
      .orderBy(asc(tasks.id));
    expect(rows.map((row) => [row.payload, row.serialKey, row.maxAttempts])).toEqual([
      [{ n: -1 }, null, 5],
      [{ n: 0 }, "lane-0", 3],
      [{ n: 1 }, "lane-1", 3],
      [{ n: 3 }, "lane-1", 3],
    ]);
    expect(await enqueueAll(database.handle.db, [])).toBe(0);
  });
});
