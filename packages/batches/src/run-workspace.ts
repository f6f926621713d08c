// Runs a workspace's steps in order, as src-cli's RunSteps does: each step's `run` through a
// shell with the workspace directory as working directory, its `env`, `files` and `outputs`
// rendered with the step template context; after each step the changes of all steps so far are
// collected and the result is cached under the step's cache key, so a re-run resumes after the
// newest cached step. Where a step runs is its placement's runner's business (step-runner.ts):
// this machine, a container, a Kubernetes Job, or a Deckhand provider over ACP. A `codingAgent`
// step runs the script renderCodingAgentStep makes of it, with a model-provider token leased for
// the workspace job and revoked when the workspace run ends.
import { resolve } from "node:path";
import type { BatchSpec, TemplateStepResult } from "@deckhand/batch-spec";
import { errorMessage } from "@deckhand/errors";
import type { BatchCodingAgentOptions, BatchRunEvent } from "@deckhand/wire";
import { AcpStepRunner } from "./acp-step-runner.ts";
import { JobModelProviderLease } from "./coding-agent-step.ts";
import type { ExecutionEnvironment } from "./execution-environment.ts";
import { LocalStepRunner } from "./local-step-runner.ts";
import type { Workspace } from "./resolve-workspaces.ts";
import { runStep, StepRunners } from "./run-step.ts";
import type { CachedStepResult, NewestCachedStep, StepCache } from "./step-cache.ts";
import type { ImageLookups, StepRuntimeChoice } from "./step-placement.ts";
import { planSteps, type StepPlan, stepPlacer } from "./step-plan.ts";
import { StepPreparation, stepCondition, stepTemplateContext } from "./step-preparation.ts";
import type { StepCheckout } from "./step-runner.ts";
import { applyWorkspaceDiff } from "./workspace-diff.ts";
import { WorkspaceRunReport, type WorkspaceRunResult } from "./workspace-run-report.ts";

export type { StepCheckout } from "./step-runner.ts";
export type { WorkspaceRunResult } from "./workspace-run-report.ts";

/** src-cli's default `-timeout` for one workspace. */
export const DEFAULT_WORKSPACE_TIMEOUT_MS = 60 * 60 * 1000;

export interface RunWorkspaceOptions {
  workspace: Workspace;
  spec: BatchSpec;
  /**
   * The checkout (`checkoutWorkspace`): `directory` is the repository root. A function is
   * called only when a step must run: a workspace whose last step is cached needs no checkout
   * at all, which is what makes a fully cached re-run cheap.
   */
  checkout: StepCheckout | (() => Promise<StepCheckout>);
  /**
   * What the process runs steps with: its launcher (environment policy and sandbox), container
   * runtime, model-provider access, agent settings and providers.
   */
  environment: ExecutionEnvironment;
  /** The directory holding the spec file; `mount` paths are relative to it. Default: cwd. */
  specDirectory?: string;
  /** Default "auto": a container when the step names one and a runtime works, else this machine. */
  runtime?: StepRuntimeChoice;
  /** The run's own agent settings (its `coding_agent` option), over the environment's. */
  codingAgent?: BatchCodingAgentOptions;
  /** For the whole workspace; default 60 minutes. */
  timeoutMs?: number;
  cache: StepCache;
  /** Run every step, ignoring (and replacing) cached results. */
  clearCache?: boolean;
  /** The images the run's steps found, shared by its workspaces in this process. */
  images?: ImageLookups;
  signal?: AbortSignal;
  onEvent?: (event: BatchRunEvent) => void;
  /**
   * The workspace job this run is: the model-provider token of its `codingAgent` steps is bound
   * to it, and it reaches the agent as `DECKHAND_JOB_ID`. Needed when a `codingAgent` step runs.
   */
  jobId?: string;
}

/**
 * The checkout steps run in: the given one, or one made when the first step must run (a
 * workspace whose last step is cached needs none). A cached result restored before it exists
 * is written to it when it is made.
 */
class StepCheckouts {
  readonly given: boolean;
  #checkout: StepCheckout | null;
  readonly #make: (() => Promise<StepCheckout>) | null;
  /** The cached diff the checkout must get before the next step runs. */
  #pendingDiff: string | null = null;
  readonly #signal: AbortSignal;

  constructor(checkout: RunWorkspaceOptions["checkout"], signal: AbortSignal) {
    this.given = typeof checkout !== "function";
    this.#checkout = typeof checkout === "function" ? null : checkout;
    this.#make = typeof checkout === "function" ? checkout : null;
    this.#signal = signal;
  }

  /** The changes of a cached step, for the checkout before the next step runs. */
  restore(diff: string): void {
    this.#pendingDiff = diff;
  }

  async ready(): Promise<StepCheckout> {
    if (this.#checkout === null && this.#make !== null) this.#checkout = await this.#make();
    const ready = this.#checkout!;
    if (this.#pendingDiff !== null) {
      await applyWorkspaceDiff(ready.directory, this.#pendingDiff, this.#signal);
      this.#pendingDiff = null;
    }
    return ready;
  }
}

/**
 * Runs the workspace's steps in `options.checkout`, which must be a clean checkout at the
 * workspace's revision. Never throws for a failing step: the result says how the workspace ended.
 * The job's model-provider token, if a `codingAgent` step leased one, is revoked before the run
 * reports how it ended, whether it completed, failed, timed out or was cancelled.
 */
export async function runWorkspace(options: RunWorkspaceOptions): Promise<WorkspaceRunResult> {
  const jobModel = new JobModelProviderLease(options.environment.modelProvider, options.jobId);
  try {
    return await runSteps(options, jobModel);
  } finally {
    // Already released when the run finished normally; this covers an unexpected throw.
    await jobModel.release();
  }
}

/** The newest cached step of the plans, restored: where a run resumes. */
interface Resumed {
  /** How many plans the cache answered. */
  start: number;
  previous: CachedStepResult | null;
}

/**
 * Finds the newest step the cache answers and restores its changes (to a given checkout now, to
 * one made later only if a later step runs: the last step's result needs no checkout).
 */
async function resume(
  plans: readonly StepPlan[],
  cache: StepCache,
  checkouts: StepCheckouts,
): Promise<Resumed> {
  if (cache.newest !== undefined && plans.length > 0) {
    let found: NewestCachedStep | undefined;
    try {
      found = await cache.newest(plans.map((plan) => plan.cacheKey));
      if (found === undefined) return { start: 0, previous: null };
      const { position, result } = found;
      if (checkouts.given || position < plans.length - 1) checkouts.restore(result.diff);
      if (checkouts.given) await checkouts.ready();
    } catch (error) {
      // The newest step asked for when none was found yet, as the look-ups one by one would say.
      throw new ResumeFailure(plans[found?.position ?? plans.length - 1]!.stepIndex, error);
    }
    return { start: found.position + 1, previous: found.result };
  }
  for (let position = plans.length - 1; position >= 0; position -= 1) {
    let cached: CachedStepResult | undefined;
    try {
      cached = await cache.get(plans[position]!.cacheKey);
      if (cached === undefined) continue;
      if (checkouts.given || position < plans.length - 1) checkouts.restore(cached.diff);
      if (checkouts.given) await checkouts.ready();
    } catch (error) {
      throw new ResumeFailure(plans[position]!.stepIndex, error);
    }
    return { start: position + 1, previous: cached };
  }
  return { start: 0, previous: null };
}

class ResumeFailure extends Error {
  constructor(stepIndex: number, cause: unknown) {
    super(
      `restoring the cached result of step ${stepIndex} failed: ${errorMessage(cause)}; run again with the cache cleared`,
    );
  }
}

async function runSteps(
  options: RunWorkspaceOptions,
  jobModel: JobModelProviderLease,
): Promise<WorkspaceRunResult> {
  const { workspace, spec, cache, environment } = options;
  const launcher = environment.launcher;
  const inherited = launcher.inheritedEnvironment();
  const timeoutMs = options.timeoutMs ?? DEFAULT_WORKSPACE_TIMEOUT_MS;
  const timeout = AbortSignal.timeout(timeoutMs);
  const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
  const checkouts = new StepCheckouts(options.checkout, signal);
  const report = new WorkspaceRunReport(workspace, options.onEvent, jobModel);
  const specDirectory = resolve(options.specDirectory ?? process.cwd());
  const placer = stepPlacer(options, inherited, "missing", options.images);
  const acpAgents = environment.acpAgents(options.codingAgent);
  const steps = {
    report,
    preparation: new StepPreparation({
      specDirectory,
      inherited,
      launcher,
      codingAgent: environment.codingAgent(options.codingAgent),
      acpPermissions: acpAgents?.defaultPermissions,
      jobModel,
      signal,
    }),
    runners: new StepRunners({
      local: new LocalStepRunner(launcher, inherited),
      acp: new AcpStepRunner({
        launcher,
        inherited,
        acpAgents,
        lease: () => jobModel.get(),
      }),
      detection: () => placer.detection(),
      kubernetes: () => environment.kubernetes(),
      shells: environment.containerShells,
      jobId: options.jobId,
    }),
    cache,
    sandbox: launcher.sandbox,
    revision: workspace.revision,
    workspacePath: workspace.path,
    signal,
  };
  const interrupted = () =>
    timeout.aborted
      ? report.finish(
          "timed_out",
          `the workspace did not finish within ${timeoutMs} ms and was stopped`,
          null,
        )
      : report.finish("cancelled", "the run was cancelled", null);

  report.emit({ type: "workspace_started", workspace: report.ref });
  let plans: StepPlan[];
  try {
    plans = await planSteps(options, inherited, specDirectory, placer);
  } catch (error) {
    return report.finish("failed", `preparing the steps failed: ${errorMessage(error)}`, null);
  }
  let resumed: Resumed = { start: 0, previous: null };
  if (options.clearCache !== true) {
    try {
      resumed = await resume(plans, cache, checkouts);
    } catch (error) {
      if (signal.aborted) return interrupted();
      return report.finish("failed", errorMessage(error), null);
    }
    for (const plan of plans.slice(0, resumed.start)) {
      report.notRun(plan.stepIndex, "cached", plan.cacheKey);
    }
  }
  let previous = resumed.previous;
  let outputs: Readonly<Record<string, unknown>> = { ...previous?.outputs };

  for (const plan of plans.slice(resumed.start)) {
    if (signal.aborted) return interrupted();
    const context = (current?: TemplateStepResult) =>
      stepTemplateContext({
        repository: {
          name: workspace.repository.name,
          branch: workspace.branch,
          fileMatches: workspace.searchResultPaths,
        },
        batchChange: { name: spec.name, description: spec.description },
        outputs,
        previous,
        ...(current ? { current } : {}),
        path: workspace.path,
      });
    const started = performance.now();
    let condition: boolean;
    try {
      condition = stepCondition(plan.step, context());
    } catch (error) {
      return report.finish(
        "failed",
        `step ${plan.stepIndex}: evaluating \`if:\` failed: ${errorMessage(error)}`,
        null,
      );
    }
    if (!condition) {
      report.notRun(plan.stepIndex, "skipped", null);
      continue;
    }
    let checkout: StepCheckout;
    try {
      checkout = await checkouts.ready();
    } catch (error) {
      if (signal.aborted) return interrupted();
      return report.finish(
        "failed",
        `checking the workspace out failed: ${errorMessage(error)}`,
        null,
      );
    }
    const record = report.record(plan.stepIndex);
    const end = await runStep(steps, { plan, record, checkout, context, outputs, started });
    if (end.status === "interrupted") return interrupted();
    if (end.status === "failed") return report.finish("failed", end.error, null);
    previous = end.result;
    outputs = end.result.outputs;
  }
  return report.finish("completed", null, previous);
}
