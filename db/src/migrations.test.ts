import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { backends, openTestDatabase } from "../test/database-fixtures.ts";
import type { DbHandle } from "./client.ts";
import { migrationsFolder } from "./client.ts";
import * as schema from "./schema/index.ts";

// drizzle-kit's programmatic API diffs the schema against the last checked-in snapshot the
// same way `drizzle-kit generate` does, without writing files.
async function latestSnapshot(): Promise<Record<string, unknown>> {
  const meta = join(migrationsFolder, "meta");
  const snapshots = (await readdir(meta)).filter((name) => name.endsWith("_snapshot.json")).sort();
  const latest = snapshots.at(-1);
  if (!latest) throw new Error("no migration snapshot is checked in");
  return JSON.parse(await readFile(join(meta, latest), "utf8")) as Record<string, unknown>;
}

/** The SQL drizzle-kit would write to create the whole schema in an empty database. */
async function schemaFromScratch(): Promise<string[]> {
  const { generateDrizzleJson, generateMigration } = await import("drizzle-kit/api");
  const empty = generateDrizzleJson({});
  return await generateMigration(empty, generateDrizzleJson(schema, empty.id));
}

interface CatalogRow {
  table: string;
  name: string;
  definition: string;
}

/**
 * Everything in the `public` schema that a migration can get wrong, as PostgreSQL itself prints
 * it: column types, nullability, defaults and identity; every constraint (primary keys, unique,
 * foreign keys with their ON DELETE action, CHECK expressions); every index with its columns,
 * uniqueness and WHERE clause; sequences and enum types. Column order is left out: a column a
 * later migration adds comes last, which is not a disagreement.
 */
async function catalog(handle: DbHandle): Promise<Record<string, string[]>> {
  const sections = {
    tables: `select c.relname as table, c.relname as name, c.relkind::text as definition
      from pg_class c join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = 'public' and c.relkind in ('r', 'p', 'v', 'm', 'f')`,
    columns: `select c.relname as table, a.attname as name,
        format_type(a.atttypid, a.atttypmod)
          || case when a.attnotnull then ' not null' else ' null' end
          || coalesce(' default ' || pg_get_expr(d.adbin, d.adrelid), '')
          || case when a.attidentity <> '' then ' identity ' || a.attidentity::text else '' end
          || case when a.attgenerated <> '' then ' generated' else '' end as definition
      from pg_attribute a
      join pg_class c on c.oid = a.attrelid
      join pg_namespace n on n.oid = c.relnamespace
      left join pg_attrdef d on d.adrelid = a.attrelid and d.adnum = a.attnum
      where n.nspname = 'public' and c.relkind in ('r', 'p') and a.attnum > 0
        and not a.attisdropped`,
    constraints: `select c.relname as table, k.conname as name,
        pg_get_constraintdef(k.oid, true) as definition
      from pg_constraint k
      join pg_class c on c.oid = k.conrelid
      join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = 'public'`,
    indexes: `select tablename as table, indexname as name, indexdef as definition
      from pg_indexes where schemaname = 'public'`,
    sequences: `select coalesce(t.relname, '') as table, s.relname as name,
        format_type(q.seqtypid, null) || ' owned by ' || coalesce(a.attname, 'nothing')
          as definition
      from pg_sequence q
      join pg_class s on s.oid = q.seqrelid
      join pg_namespace n on n.oid = s.relnamespace
      left join pg_depend d on d.objid = s.oid and d.classid = 'pg_class'::regclass
        and d.refclassid = 'pg_class'::regclass and d.deptype in ('a', 'i')
      left join pg_class t on t.oid = d.refobjid
      left join pg_attribute a on a.attrelid = d.refobjid and a.attnum = d.refobjsubid
      where n.nspname = 'public'`,
    enums: `select '' as table, t.typname as name,
        string_agg(e.enumlabel, ', ' order by e.enumsortorder) as definition
      from pg_type t
      join pg_namespace n on n.oid = t.typnamespace
      join pg_enum e on e.enumtypid = t.oid
      where n.nspname = 'public'
      group by t.typname`,
  };
  const result: Record<string, string[]> = {};
  for (const [section, query] of Object.entries(sections)) {
    const { rows } = await handle.query<CatalogRow>(query);
    result[section] = rows
      .map((row) => `${row.table}.${row.name}: ${row.definition}`)
      .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  }
  return result;
}

describe("migrations", () => {
  it("match the drizzle schema, so no migration is missing", async () => {
    const { generateDrizzleJson, generateMigration } = await import("drizzle-kit/api");
    const previous = await latestSnapshot();
    const current = generateDrizzleJson(schema, previous.id as string);
    const statements = await generateMigration(previous as never, current);
    expect(
      statements,
      "schema changed without a migration: run `pnpm --filter @deckhand/db generate`",
    ).toEqual([]);
  });

  it("are listed in the journal, one SQL file per entry", async () => {
    const journal = JSON.parse(
      await readFile(join(migrationsFolder, "meta", "_journal.json"), "utf8"),
    ) as { entries: { tag: string }[] };
    const files = (await readdir(migrationsFolder)).filter((name) => name.endsWith(".sql")).sort();
    expect(files).toEqual(journal.entries.map((entry) => `${entry.tag}.sql`));
  });
});

// The snapshot diff above trusts the SQL files to say what their snapshots say. This applies
// the SQL itself to a fresh database and compares the result with a database built straight
// from the drizzle schema, so a hand-edited migration, or one that disagrees with its snapshot,
// fails too.
describe.each(backends)("migrations applied on %s", (kind) => {
  it("build the same tables, columns, constraints and indexes as the drizzle schema", async () => {
    const migrated = await openTestDatabase(kind);
    const reference = await openTestDatabase(kind, { migrate: false });
    try {
      for (const statement of await schemaFromScratch()) {
        await reference.handle.query(statement);
      }
      const expected = await catalog(reference.handle);
      // A catalog query that matched nothing would make the comparison vacuous.
      for (const section of ["tables", "columns", "constraints", "indexes", "sequences"]) {
        expect(expected[section], section).not.toEqual([]);
      }
      expect(
        await catalog(migrated.handle),
        "the checked-in SQL migrations do not build what the drizzle schema declares: regenerate them with `pnpm --filter @deckhand/db generate` instead of editing SQL by hand",
      ).toEqual(expected);
    } finally {
      await Promise.all([migrated.dispose(), reference.dispose()]);
    }
  });
});
