// Cache keys for step results. A key must be the same for the same input on any machine and in
// any process, and must change whenever anything that can change the step's result changes.
import { createHash } from "node:crypto";
import { WireEnv } from "@deckhand/wire";
import { BatchSpecError } from "./batch-spec-error.ts";
import type { HookStepInput, StepInput } from "./batch-spec-schema.ts";
import { canonicalStep } from "./canonical.ts";
import { resolveStepEnv } from "./step-env.ts";

/**
 * Variables whose values differ per job although the work is the same: the model-provider
 * token and the job id. Keeping them out of the key is what lets a re-run hit the cache, and it
 * keeps the token out of anything stored.
 */
export const perJobEnvNames: readonly string[] = [WireEnv.modelProviderToken, WireEnv.jobId];

/** A file a step mounts, as the caller stat()ed it. */
export interface MountedFileMetadata {
  path: string;
  size: number;
  /** Modification time: a Date, milliseconds since the epoch, or an ISO 8601 string. */
  mtime: Date | number | string;
}

/**
 * Where a step runs, as its cache key records it: on the host with a shell (`bash` or `sh`), or
 * in a container image known by its local id (config digest), never only by its name, so a
 * re-tagged or rebuilt image is another image. A result made in one place is never reused in
 * another.
 */
export type StepRuntimeKey =
  | { runtime: "local"; shell: string }
  | { runtime: "container"; imageId: string }
  /**
   * A Kubernetes Job: the image as the step names it, since the cluster (not this machine) pulls
   * it; a digest reference (`image@sha256:…`) pins it as an id does.
   */
  | { runtime: "kubernetes"; image: string };

export interface CacheKeyInput {
  repository: {
    id: string;
    name: string;
    /** The base branch, e.g. `refs/heads/main`. */
    baseRef: string;
    /** The commit the workspace was checked out at. */
    baseRev: string;
    /** Search result paths in the repository; their order does not matter. */
    fileMatches?: readonly string[];
  };
  /** The workspace's path relative to the repository root; "" for the root. */
  path: string;
  onlyFetchWorkspace: boolean;
  /** All steps of the spec (or hook); the key covers steps 0..stepIndex. */
  steps: readonly (StepInput | HookStepInput)[];
  batchChange: { name: string; description?: string };
  stepIndex: number;
  /** The runner's environment, for variables the steps pass through. */
  runnerEnv?: Readonly<Record<string, string | undefined>>;
  /** Metadata of every file the steps up to stepIndex mount; order does not matter. */
  mountedFiles?: readonly MountedFileMetadata[];
  /**
   * Where each step runs, indexed like `steps`; null (or absent) for a step that does not run
   * in this workspace (its static `if:` is false) or cannot run.
   */
  runtimes?: readonly (StepRuntimeKey | null | undefined)[];
}

/** JSON with object keys sorted at every level and undefined members left out. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") {
    if (typeof value === "number" && !Number.isFinite(value)) {
      throw new BatchSpecError("invalid_argument", `cannot encode ${value} in a cache key`);
    }
    return JSON.stringify(value) ?? "null";
  }
  if (Array.isArray(value)) {
    return `[${value.map((item) => (item === undefined ? "null" : canonicalJson(item))).join(",")}]`;
  }
  const entries = Object.keys(value)
    .filter((key) => (value as Record<string, unknown>)[key] !== undefined)
    .sort()
    .map(
      (key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`,
    );
  return `{${entries.join(",")}}`;
}

function isoTime(mtime: Date | number | string): string {
  const date = mtime instanceof Date ? mtime : new Date(mtime);
  if (Number.isNaN(date.getTime())) {
    throw new BatchSpecError(
      "invalid_argument",
      `mounted file mtime ${String(mtime)} is not a time`,
    );
  }
  return date.toISOString();
}

/** Only the fields a key depends on, whatever else a caller's object carries. */
function runtimeKey(runtime: StepRuntimeKey | null | undefined): StepRuntimeKey | null {
  if (runtime === null || runtime === undefined) return null;
  if (runtime.runtime === "local") return { runtime: "local", shell: runtime.shell };
  if (runtime.runtime === "kubernetes") return { runtime: "kubernetes", image: runtime.image };
  return { runtime: "container", imageId: runtime.imageId };
}

/** The canonical document a cache key is the hash of; exported for debugging cache misses. */
export function cacheKeyDocument(input: CacheKeyInput): unknown {
  const { stepIndex, steps } = input;
  if (!Number.isInteger(stepIndex) || stepIndex < 0 || stepIndex >= steps.length) {
    throw new BatchSpecError(
      "invalid_argument",
      `step index ${stepIndex} is out of range for ${steps.length} steps`,
    );
  }
  const covered = steps.slice(0, stepIndex + 1);
  const environments = covered.map((step) => {
    const env = resolveStepEnv(step.env, input.runnerEnv ?? {});
    for (const name of perJobEnvNames) delete env[name];
    return env;
  });
  return {
    // Bumped when the document changes shape, so old entries miss instead of colliding.
    // 2: where each step runs (`runtimes`); results from before cannot say, so they all miss.
    schema: "deckhand-step-cache/2",
    repository: {
      id: input.repository.id,
      name: input.repository.name,
      baseRef: input.repository.baseRef,
      baseRev: input.repository.baseRev,
      fileMatches: [...(input.repository.fileMatches ?? [])].sort(),
    },
    path: input.path,
    onlyFetchWorkspace: input.onlyFetchWorkspace,
    // Env is covered by `environments`, resolved: a map and a list that give the same variables
    // give the same key, and a passed-through variable's value counts, not its spelling.
    steps: covered.map((step) => ({ ...canonicalStep(step), env: undefined })),
    batchChange: { name: input.batchChange.name, description: input.batchChange.description ?? "" },
    stepIndex,
    environments,
    runtimes: covered.map((_, index) => runtimeKey(input.runtimes?.[index])),
    mountedFiles: [...(input.mountedFiles ?? [])]
      .map((file) => ({ path: file.path, size: file.size, mtime: isoTime(file.mtime) }))
      .sort((left, right) => (left.path < right.path ? -1 : left.path > right.path ? 1 : 0)),
  };
}

/** The cache key of step `stepIndex` in a workspace: a sha256 in lower-case hex. */
export function computeCacheKey(input: CacheKeyInput): string {
  return createHash("sha256")
    .update(canonicalJson(cacheKeyDocument(input)))
    .digest("hex");
}
