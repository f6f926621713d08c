import { createPostgresTestDatabase, testPostgresUrl } from "@deckhand/testkit";
import { type CreateDbOptions, createDb, type DbHandle, type DbKind } from "../src/index.ts";

/** The PostgreSQL server the suite also runs against, when one is given. */
export const postgresUrl = testPostgresUrl;

/** Every backend the database suite runs on: PGlite always, PostgreSQL when a URL is set. */
export const backends: DbKind[] = postgresUrl ? ["pglite", "postgres"] : ["pglite"];

export const postgresSkipReason =
  "needs PostgreSQL: set DATABASE_URL (scripts/ci-postgres.sh start prints one)";

export interface TestDatabase {
  handle: DbHandle;
  /** The fresh database's URL on PostgreSQL, for other processes to connect to. */
  url: string | undefined;
  dispose(): Promise<void>;
}

/**
 * A migrated, empty database. On PostgreSQL each call creates its own database (testkit's
 * `createPostgresTestDatabase`) so test files running in parallel never see each other's rows;
 * it is dropped on dispose.
 */
export async function openTestDatabase(
  kind: DbKind,
  options: Omit<CreateDbOptions, "databaseUrl"> = {},
): Promise<TestDatabase> {
  if (kind === "pglite") {
    const handle = await createDb({ dataDir: "memory://", ...options });
    return { handle, url: undefined, dispose: () => handle.close() };
  }
  if (!postgresUrl) throw new Error(postgresSkipReason);
  const database = await createPostgresTestDatabase(postgresUrl);
  let handle: DbHandle;
  try {
    handle = await createDb({ ...options, databaseUrl: database.url });
  } catch (error) {
    await database.drop();
    throw error;
  }
  return {
    handle,
    url: database.url,
    async dispose() {
      await handle.close();
      await database.drop();
    },
  };
}

/** Polls `check` until it returns true or the time is up. */
export async function waitFor(
  check: () => Promise<boolean> | boolean,
  timeoutMs = 60_000,
  intervalMs = 20,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
