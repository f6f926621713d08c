// The step-result cache: what a step produced, under the key batch-spec computes from everything
// that determines it (computeCacheKey), so a re-run resumes after the newest step it already ran.
import type { ChangedFile } from "./workspace-diff.ts";

/** One step's result as stored; the diff holds the changes of every step up to this one. */
export interface CachedStepResult {
  stepIndex: number;
  exitCode: number;
  /** `git diff --binary` of the workspace against its base commit after the step. */
  diff: string;
  files: ChangedFile[];
  /** Every output set by this step and the steps before it. */
  outputs: Record<string, unknown>;
  /** Bounded and redacted. */
  stdout: string;
  stderr: string;
}

export interface StepCache {
  get(key: string): Promise<CachedStepResult | undefined>;
  /**
   * The last of `keys` (in their order) that is cached, and where it is in them: where a
   * workspace resumes. A cache that can look several keys up at once has it; without it they
   * are looked up one at a time from the last.
   */
  newest?(keys: readonly string[]): Promise<NewestCachedStep | undefined>;
  /** Stores (or replaces) the result under `key`. */
  put(key: string, result: CachedStepResult): Promise<void>;
}

export interface NewestCachedStep {
  /** Its key's position in the keys asked for. */
  position: number;
  result: CachedStepResult;
}

/** A cache for one process: results are copied in and out, so callers cannot alter entries. */
export class MemoryStepCache implements StepCache {
  private readonly entries = new Map<string, CachedStepResult>();

  async get(key: string): Promise<CachedStepResult | undefined> {
    const entry = this.entries.get(key);
    return entry === undefined ? undefined : structuredClone(entry);
  }

  async newest(keys: readonly string[]): Promise<NewestCachedStep | undefined> {
    for (let position = keys.length - 1; position >= 0; position -= 1) {
      const entry = this.entries.get(keys[position]!);
      if (entry !== undefined) return { position, result: structuredClone(entry) };
    }
    return undefined;
  }

  async put(key: string, result: CachedStepResult): Promise<void> {
    this.entries.set(key, structuredClone(result));
  }
}
