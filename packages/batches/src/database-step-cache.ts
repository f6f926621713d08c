// The step cache in the database (`step_results`), so every executor of a Deckhand server shares
// it and a re-run on another worker still resumes after the newest cached step.
import { type Database, stepResults } from "@deckhand/db";
import { desc, eq, inArray, sql } from "drizzle-orm";
import type { CachedStepResult, NewestCachedStep, StepCache } from "./step-cache.ts";
import type { ChangedFile } from "./workspace-diff.ts";

export class DatabaseStepCache implements StepCache {
  private readonly db: Database;

  constructor(db: Database) {
    this.db = db;
  }

  async get(key: string): Promise<CachedStepResult | undefined> {
    const [row] = await this.db
      .select()
      .from(stepResults)
      .where(eq(stepResults.cacheKey, key))
      .limit(1);
    return row === undefined ? undefined : resultOf(row);
  }

  /** The newest of `keys` cached (the last in their order that is), in one statement. */
  async newest(keys: readonly string[]): Promise<NewestCachedStep | undefined> {
    if (keys.length === 0) return undefined;
    // Only the newest row found is read (a diff holds every step's changes so far).
    const position = sql<number>`case ${stepResults.cacheKey} ${sql.join(
      // From the last: a key given twice is at its last position. The position is a literal
      // (a number this code makes), so it orders as a number.
      keys.map((key, index) => sql`when ${key} then ${sql.raw(String(index))}`).reverse(),
      sql` `,
    )} end`;
    const [row] = await this.db
      .select({ position, row: stepResults })
      .from(stepResults)
      .where(inArray(stepResults.cacheKey, [...keys]))
      .orderBy(desc(position))
      .limit(1);
    return row === undefined
      ? undefined
      : { position: Number(row.position), result: resultOf(row.row) };
  }

  async put(key: string, result: CachedStepResult): Promise<void> {
    const values = {
      stepIndex: result.stepIndex,
      exitCode: result.exitCode,
      diff: result.diff,
      files: result.files,
      outputs: result.outputs,
      stdout: result.stdout,
      stderr: result.stderr,
    };
    // Two executors may finish the same step at once; the later result replaces the earlier.
    await this.db
      .insert(stepResults)
      .values({ cacheKey: key, ...values })
      .onConflictDoUpdate({ target: stepResults.cacheKey, set: values });
  }
}

function resultOf(row: typeof stepResults.$inferSelect): CachedStepResult {
  return {
    stepIndex: row.stepIndex,
    exitCode: row.exitCode,
    diff: row.diff,
    files: row.files as ChangedFile[],
    outputs: row.outputs as Record<string, unknown>,
    stdout: row.stdout,
    stderr: row.stderr,
  };
}
