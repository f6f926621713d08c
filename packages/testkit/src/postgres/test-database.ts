import { randomUUID } from "node:crypto";
import pg from "pg";

/** The PostgreSQL server tests also run against, when one is given (CI always gives one). */
export const testPostgresUrl: string | undefined = process.env.DATABASE_URL || undefined;

export interface PostgresTestDatabase {
  /** `deckhand_test_<random>`. */
  name: string;
  /** The server URL with this database as its path: pass it as `DATABASE_URL`. */
  url: string;
  /** Drops the database, ending any connection still open to it. */
  drop(): Promise<void>;
}

/**
 * Creates an empty database of its own on the PostgreSQL server at `serverUrl` (the role needs
 * CREATEDB). Tests running in parallel each get one, so none sees another's rows or claims
 * another's queued tasks.
 */
export async function createPostgresTestDatabase(
  serverUrl: string | undefined = testPostgresUrl,
): Promise<PostgresTestDatabase> {
  if (!serverUrl) {
    throw new Error("needs PostgreSQL: set DATABASE_URL (scripts/ci-postgres.sh start prints one)");
  }
  const name = `deckhand_test_${randomUUID().replaceAll("-", "").slice(0, 16)}`;
  await administer(serverUrl, `create database ${name}`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  let dropped: Promise<void> | null = null;
  return {
    name,
    url: url.toString(),
    drop() {
      dropped ??= administer(serverUrl, `drop database if exists ${name} with (force)`);
      return dropped;
    },
  };
}

async function administer(serverUrl: string, statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}
