// One step of a workspace run whose `if:` let it run: prepared (step-preparation.ts), run by the
// runner its placement names, and its result (the changes of all steps so far and its outputs)
// cached under its key, so a later run resumes after it.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TemplateContext, TemplateStepResult } from "@deckhand/batch-spec";
import type { ContainerRuntimeDetection } from "@deckhand/container-runtime";
import { errorMessage } from "@deckhand/errors";
import type { KubernetesStepRunner } from "@deckhand/kubernetes-runtime";
import type { ProcessLauncher } from "@deckhand/sandbox";
import { looksLikeSecretName, redactEnv } from "@deckhand/secrets";
import { ContainerStepRunner } from "./container-step-runner.ts";
import { KubernetesJobStepRunner } from "./kubernetes-step-runner.ts";
import type { CachedStepResult, StepCache } from "./step-cache.ts";
import { missingCommandHint } from "./step-placement.ts";
import type { StepPlan } from "./step-plan.ts";
import {
  isAcpStep,
  type PreparedStepRun,
  renderStepOutputs,
  type StepPreparation,
  stepTemplateResult,
} from "./step-preparation.ts";
import type { StepCheckout, StepRunner } from "./step-runner.ts";
import { collectWorkspaceDiff } from "./workspace-diff.ts";
import type { StepRecord, WorkspaceRunReport } from "./workspace-run-report.ts";

/**
 * The runner of each step, by its placement: an `acp` step's provider, a container, a Kubernetes
 * Job, or this machine. A runner for another place is chosen here.
 */
export class StepRunners {
  readonly #options: StepRunnersOptions;
  #container: Promise<StepRunner> | undefined;
  #kubernetes: Promise<StepRunner> | undefined;

  constructor(options: StepRunnersOptions) {
    this.#options = options;
  }

  async for(plan: StepPlan): Promise<StepRunner> {
    const { local, acp, detection, kubernetes, shells, jobId } = this.#options;
    if (isAcpStep(plan.step)) return acp;
    switch (plan.placement.runtime) {
      case "container":
        this.#container ??= detection().then(
          (detected) => new ContainerStepRunner(detected.runtime!, shells),
        );
        return this.#container;
      case "kubernetes":
        this.#kubernetes ??= kubernetes().then(
          (cluster) => new KubernetesJobStepRunner(cluster, shells, jobId),
        );
        return this.#kubernetes;
      default:
        return local;
    }
  }
}

export interface StepRunnersOptions {
  local: StepRunner;
  acp: StepRunner;
  /** The container runtime steps placed in a container run with. */
  detection: () => Promise<ContainerRuntimeDetection>;
  /** The cluster steps of a `kubernetes` run run in; rejects when none is configured. */
  kubernetes: () => Promise<KubernetesStepRunner>;
  /** Which shell each image's scripts get, shared by the process's runs. */
  shells: Map<string, Promise<string>>;
  /** The workspace job the steps belong to, as Kubernetes Jobs note it. */
  jobId: string | undefined;
}

/** What the steps of one workspace run share. */
export interface StepRunContext {
  report: WorkspaceRunReport;
  preparation: StepPreparation;
  runners: StepRunners;
  cache: StepCache;
  /** How local steps are confined, for their `step_started` events. */
  sandbox: ProcessLauncher["sandbox"];
  /** The workspace's revision, which a step's changes are taken against. */
  revision: string;
  /** The workspace's path in the repository. */
  workspacePath: string;
  signal: AbortSignal;
}

export interface StepToRun {
  plan: StepPlan;
  /** The step's record, filled in as it runs. */
  record: StepRecord;
  checkout: StepCheckout;
  /** The step's template context, with its own result once it ran. */
  context: (current?: TemplateStepResult) => TemplateContext;
  /** The outputs of the steps before. */
  outputs: Readonly<Record<string, unknown>>;
  /** When the step's turn came (before its `if:`), for its duration. */
  started: number;
}

export type StepEnd =
  | { status: "ran"; result: CachedStepResult }
  | { status: "interrupted" }
  | { status: "failed"; error: string };

/** A step that ran and exited non-zero; its message carries the step's stderr. */
class StepFailure extends Error {}

/**
 * Runs one step; never throws: a step that fails ends `failed` with what went wrong, one stopped
 * by a cancel or the timeout ends `interrupted`. Its `step_finished` event is emitted either way.
 */
export async function runStep(run: StepRunContext, input: StepToRun): Promise<StepEnd> {
  const { plan, record } = input;
  const { report, signal } = run;
  const temporary = await mkdtemp(join(tmpdir(), "deckhand-step-"));
  try {
    const placement = plan.placement;
    if (placement.problem !== null) throw placement.problem;
    if (placement.fallbackReason !== null) {
      report.emit({
        type: "step_runtime_fallback",
        workspace: report.ref,
        step_index: plan.stepIndex,
        image: placement.image!,
        reason: placement.fallbackReason,
      });
    }
    const runner = await run.runners.for(plan);
    record.runtime = placement.runtime;
    const prepared = await run.preparation.prepare({
      plan,
      context: input.context(),
      checkout: input.checkout,
      workspacePath: run.workspacePath,
      runner,
      temporary,
      onOutput: (stream, text) =>
        report.emit({
          type: "step_output",
          workspace: report.ref,
          step_index: plan.stepIndex,
          stream,
          text,
        }),
    });
    record.shell = prepared.step.shell;
    reportStarted(run, plan, prepared);
    const { exitCode } = await runner.run(prepared.step);
    record.exitCode = exitCode;
    record.durationMs = performance.now() - input.started;
    record.stdout = prepared.output.text("stdout");
    record.stderr = prepared.output.text("stderr");
    if (signal.aborted) {
      report.stepFinished(record);
      return { status: "interrupted" };
    }
    if (exitCode !== 0) {
      const hint = missingCommandHint(placement, exitCode);
      throw new StepFailure(
        `step ${plan.stepIndex} ${exitCode === null ? "was killed by a signal" : `failed with exit code ${exitCode}`}${record.stderr.trim() === "" ? "" : `: ${record.stderr.trim()}`}${hint === null ? "" : `\n${hint}`}`,
      );
    }
    const result = await stepResult(run, input, exitCode);
    record.cacheKey = plan.cacheKey;
    record.outcome = "run";
    record.durationMs = performance.now() - input.started;
    report.stepFinished(record);
    return { status: "ran", result };
  } catch (error) {
    record.durationMs = performance.now() - input.started;
    report.stepFinished(record);
    if (signal.aborted) return { status: "interrupted" };
    const message =
      error instanceof StepFailure
        ? error.message
        : `step ${plan.stepIndex} failed: ${errorMessage(error)}`;
    return { status: "failed", error: message };
  } finally {
    await rm(temporary, { recursive: true, force: true });
  }
}

function reportStarted(run: StepRunContext, plan: StepPlan, prepared: PreparedStepRun): void {
  const { step, redact } = prepared;
  const runtime = plan.placement.runtime;
  run.report.emit({
    type: "step_started",
    workspace: run.report.ref,
    step_index: plan.stepIndex,
    runtime,
    image: runtime === "local" ? null : plan.step.container!,
    ...(runtime === "local" ? { sandbox: run.sandbox } : {}),
    shell: step.shell,
    command: redact(step.script),
    env: redactEnv(step.env, {
      secretNames: Object.keys(step.env).filter(looksLikeSecretName),
      secretValues: step.secrets,
    }),
  });
}

/** The changes of all steps so far and the outputs after the step, cached under its key. */
async function stepResult(
  run: StepRunContext,
  input: StepToRun,
  exitCode: number,
): Promise<CachedStepResult> {
  const changes = await collectWorkspaceDiff(input.checkout.directory, run.revision, run.signal);
  const current: CachedStepResult = {
    stepIndex: input.plan.stepIndex,
    exitCode,
    diff: changes.diff,
    files: changes.files,
    outputs: {},
    stdout: input.record.stdout,
    stderr: input.record.stderr,
  };
  current.outputs = renderStepOutputs(
    input.plan.step,
    input.outputs,
    input.context(stepTemplateResult(current)),
  );
  await run.cache.put(input.plan.cacheKey, current);
  return current;
}
