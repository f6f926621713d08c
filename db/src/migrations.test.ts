import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
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
