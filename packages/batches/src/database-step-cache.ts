// The step cache in the database (`step_results`), so every executor of a Deckhand server shares
// it and a re-run on another worker still resumes after the newest cached step.
import { type Database, stepResults } from "@deckhand/db";
import { eq } from "drizzle-orm";
import type { CachedStepResult, StepCache } from "./step-cache.ts";
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
    if (row === undefined) return undefined;
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
