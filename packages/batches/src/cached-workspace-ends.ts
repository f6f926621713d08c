// Workspaces a run can complete when it is created: those whose last step's result is in the step
// cache (src-cli's coordinator asks its cache before it schedules a task). Such a workspace's job
// would run no step and need no checkout: it would look the newest cached step up, tell its
// start and each step cached, build its changesets from the last step's diff and end. Its end is
// made here the way the job makes it (the same report and changeset building), so the run's
// creation writes the same events, step rows, diff and changesets, and queues no task for it.
import type { BatchSpec } from "@deckhand/batch-spec";
import type { BatchRunEvent } from "@deckhand/wire";
import { JobModelProviderLease } from "./coding-agent-step.ts";
import type { ExecutionEnvironment } from "./execution-environment.ts";
import { mapLimited } from "./repository-git.ts";
import type { Workspace } from "./resolve-workspaces.ts";
import type { WorkspaceEnd } from "./run-store.ts";
import type { StepCache } from "./step-cache.ts";
import type { ImageLookups, StepRuntimeChoice } from "./step-placement.ts";
import { planSteps, stepPlacer } from "./step-plan.ts";
import { endOf } from "./workspace-job.ts";
import { WorkspaceRunReport } from "./workspace-run-report.ts";

export interface CachedEndOptions {
  spec: BatchSpec;
  /** Resolved; `mount` paths are relative to it. */
  specDirectory: string;
  cache: StepCache;
  runtime: StepRuntimeChoice;
  environment: ExecutionEnvironment;
  /**
   * The run's image look-ups: each image is looked up once for all its workspaces, and the run's
   * jobs in this process are handed what was found (ExecutionEnvironment.keepRunImages).
   */
  images: ImageLookups;
}

/**
 * Each workspace's end when its last step is cached and its changesets build, else null (its job
 * runs: a step to run, a step before it that is cached, or anything the job would report).
 */
export function cachedWorkspaceEnds(
  workspaces: readonly Workspace[],
  options: CachedEndOptions,
): Promise<(WorkspaceEnd | null)[]> {
  return mapLimited(workspaces, 4, (workspace) =>
    cachedWorkspaceEnd(workspace, options).catch(() => null),
  );
}

async function cachedWorkspaceEnd(
  workspace: Workspace,
  options: CachedEndOptions,
): Promise<WorkspaceEnd | null> {
  const { cache, spec } = options;
  if (cache.newest === undefined || workspace.steps.length === 0) return null;
  const inherited = options.environment.launcher.inheritedEnvironment();
  // No image is pulled to look a result up: a step whose image is not here has none to find,
  // and its job pulls it.
  const placer = stepPlacer(options, inherited, "never", options.images);
  const plans = await planSteps({ workspace, spec }, inherited, options.specDirectory, placer);
  const found = await cache.newest(plans.map((plan) => plan.cacheKey));
  if (found === undefined || found.position !== plans.length - 1) return null;
  const events: BatchRunEvent[] = [];
  // No step runs, so no model-provider token is ever leased.
  const report = new WorkspaceRunReport(
    workspace,
    (event) => events.push(event),
    new JobModelProviderLease(undefined, undefined),
  );
  report.emit({ type: "workspace_started", workspace: report.ref });
  for (const plan of plans) report.notRun(plan.stepIndex, "cached", plan.cacheKey);
  const result = await report.finish("completed", null, found.result);
  const end = endOf(spec, workspace, result);
  if (end.status !== "completed") return null;
  // `workspace_finished` is the run store's to write, with the workspace's row.
  return { ...end, progress: events.filter((event) => event.type !== "workspace_finished") };
}
