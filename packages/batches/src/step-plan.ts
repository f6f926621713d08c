// Where each step of a workspace runs and what its result is cached under, decided before any
// step runs: each key covers the steps before it, where they run and what they mount, so a run
// resumes after the newest step whose key is cached (src-cli's execution cache).
import { lstat, readdir } from "node:fs/promises";
import { join, resolve } from "node:path";
import {
  type BatchSpec,
  computeCacheKey,
  type MountedFileMetadata,
  type Step,
  type StepRuntimeKey,
} from "@deckhand/batch-spec";
import type { ExecutionEnvironment } from "./execution-environment.ts";
import { mapLimited } from "./repository-git.ts";
import type { Workspace } from "./resolve-workspaces.ts";
import type { StepCache } from "./step-cache.ts";
import {
  type ImageLookups,
  placementKey,
  type StepPlacement,
  StepPlacer,
  type StepRuntimeChoice,
} from "./step-placement.ts";

/** What placing and keying a workspace's steps takes of its run (`RunWorkspaceOptions` has it). */
export interface StepPlanOptions {
  workspace: Workspace;
  spec: BatchSpec;
  /** The directory holding the spec file; `mount` paths are relative to it. Default: cwd. */
  specDirectory?: string;
  cache: StepCache;
  /** Default "auto". */
  runtime?: StepRuntimeChoice;
  environment: ExecutionEnvironment;
}

export interface StepPlan {
  stepIndex: number;
  step: Step;
  placement: StepPlacement;
  cacheKey: string;
}

async function mountedFileMetadata(path: string): Promise<MountedFileMetadata[]> {
  const info = await lstat(path);
  if (!info.isDirectory()) return [{ path, size: info.size, mtime: info.mtime }];
  const entries = await readdir(path, { recursive: true, withFileTypes: true });
  const files: MountedFileMetadata[] = [];
  for (const entry of entries) {
    if (entry.isDirectory()) continue;
    const file = join(entry.parentPath, entry.name);
    const fileInfo = await lstat(file);
    files.push({ path: file, size: fileInfo.size, mtime: fileInfo.mtime });
  }
  return files;
}

/**
 * How much of a workspace a run would answer from the cache: the number of its steps up to and
 * including the newest cached one (a run resumes after it), 0 when none is cached, and the
 * number of its steps when nothing would run. What `deckhand batch workspaces` shows before a
 * run, computed with the keys `runWorkspace` uses.
 */
export async function cachedStepCount(
  options: Pick<
    StepPlanOptions,
    "workspace" | "spec" | "specDirectory" | "cache" | "runtime" | "environment"
  > & { images?: ImageLookups },
): Promise<number> {
  const specDirectory = resolve(options.specDirectory ?? process.cwd());
  const runnerEnv = options.environment.launcher.inheritedEnvironment();
  // Counting pulls no image: a step whose image is not here has no result to find.
  const placer = stepPlacer(options, runnerEnv, "never", options.images);
  const plans = await planSteps(options, runnerEnv, specDirectory, placer);
  for (let position = plans.length - 1; position >= 0; position -= 1) {
    if ((await options.cache.get(plans[position]!.cacheKey)) !== undefined) return position + 1;
  }
  return 0;
}

/**
 * `cachedStepCount` of each workspace, a few at a time (sharing their image look-ups); 0 for every one
 * when the run clears the cache.
 */
export function cachedStepCounts(
  workspaces: readonly Workspace[],
  options: Pick<StepPlanOptions, "spec" | "specDirectory" | "cache" | "runtime" | "environment"> & {
    clearCache?: boolean;
  },
): Promise<number[]> {
  // The workspaces look each image up once, not once each (an engine process per look-up).
  const images: ImageLookups = new Map();
  return mapLimited(workspaces, 4, async (workspace) =>
    options.clearCache === true ? 0 : cachedStepCount({ ...options, workspace, images }),
  );
}

/** Places a run's steps with the environment's container runtime (detected once per process). */
export function stepPlacer(
  options: Pick<StepPlanOptions, "spec" | "runtime" | "environment">,
  runnerEnv: Record<string, string>,
  pull: "missing" | "never",
  images?: ImageLookups,
): StepPlacer {
  const choice = options.runtime ?? "auto";
  return new StepPlacer({
    choice,
    ...options.environment.containers(options.spec, choice),
    path: runnerEnv.PATH,
    pull,
    ...(images !== undefined ? { images } : {}),
  });
}

/**
 * Where each step of the workspace runs and its cache key, each key covering the steps before
 * it and where they run.
 */
export async function planSteps(
  options: Pick<StepPlanOptions, "workspace" | "spec">,
  runnerEnv: Record<string, string>,
  specDirectory: string,
  placer: StepPlacer,
): Promise<StepPlan[]> {
  const { workspace, spec } = options;
  const allSteps = spec.steps ?? [];
  const mounted: MountedFileMetadata[] = [];
  const plans: StepPlan[] = [];
  const runtimes: (StepRuntimeKey | null)[] = allSteps.map(() => null);
  let covered = 0;
  for (const { index, step } of workspace.steps) {
    const placement = await placer.place(step, index);
    runtimes[index] = placementKey(placement);
    for (; covered <= index; covered += 1) {
      for (const mount of allSteps[covered]?.mount ?? []) {
        mounted.push(...(await mountedFileMetadata(resolve(specDirectory, mount.path))));
      }
    }
    const cacheKey = computeCacheKey({
      repository: {
        id: workspace.repository.id,
        name: workspace.repository.name,
        baseRef: workspace.branch,
        baseRev: workspace.revision,
        fileMatches: workspace.searchResultPaths,
      },
      path: workspace.path,
      onlyFetchWorkspace: workspace.onlyFetchWorkspace,
      steps: allSteps,
      batchChange: { name: spec.name, description: spec.description },
      stepIndex: index,
      runnerEnv,
      mountedFiles: mounted,
      runtimes,
    });
    plans.push({ stepIndex: index, step, placement, cacheKey });
  }
  return plans;
}
