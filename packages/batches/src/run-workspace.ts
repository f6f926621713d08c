// Runs a workspace's steps in order, as src-cli does: each step's `run` through a shell with the
// workspace directory as working directory, its `env`, `files` and `outputs` rendered with the
// step template context; after each step the changes of all steps so far are collected and the
// result is cached under the step's cache key, so a re-run resumes after the newest cached step.
// A `codingAgent` step runs the script renderCodingAgentStep makes of it the same way, with a
// model-provider token leased for the workspace job and revoked when the workspace run ends; one
// of type `acp` runs a Deckhand provider over ACP in the workspace instead (acp-agent-step.ts),
// with the same lease, cache, outputs and changes.
import { lstat, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, posix, resolve } from "node:path";
import { StringDecoder } from "node:string_decoder";
import {
  ACP_AGENT_TYPE,
  type AgentPlatform,
  type BatchSpec,
  computeCacheKey,
  createStepTemplateContext,
  type MountedFileMetadata,
  renderTemplate,
  resolveStepEnv,
  type Step,
  type StepRuntimeKey,
  type TemplateContext,
  type TemplateStepResult,
  type TemplateValue,
} from "@deckhand/batch-spec";
import {
  type ContainerMount,
  type ContainerRuntime,
  type ContainerRuntimeDetection,
  inspectImage,
  mountBreakingCharacter,
  runContainer,
} from "@deckhand/container-runtime";
import { errorMessage } from "@deckhand/errors";
import { HeadTailBuffer } from "@deckhand/headtail";
import { ProcessLauncher } from "@deckhand/sandbox";
import {
  type AgentEnvironmentPolicy,
  agentEnvironmentPolicy,
  looksLikeSecretName,
  redactEnv,
  redactSecrets,
} from "@deckhand/secrets";
import type {
  BatchRunEvent,
  BatchStepOutcome,
  BatchStepRuntime,
  BatchWorkspaceRef,
  BatchWorkspaceStatus,
} from "@deckhand/wire";
import { parse as parseYaml } from "yaml";
import {
  type AcpAgentStepOptions,
  DEFAULT_ACP_STEP_PERMISSIONS,
  runAcpAgentStep,
} from "./acp-agent-step.ts";
import { BatchesError } from "./batches-error.ts";
import {
  type CodingAgentOptions,
  codingAgentScript,
  codingAgentSettings,
  containerPlatform,
  installSourceHosts,
  installSourcePaths,
  JobModelProviderLease,
  localAgentInstallDirectory,
  localPlatform,
  type ModelProviderAccess,
  PLATFORM_PROBE,
} from "./coding-agent-step.ts";
import {
  type KubernetesRunnerSource,
  kubernetesPlatform,
  kubernetesShell,
  runKubernetesStep,
} from "./kubernetes-step.ts";
import { placeLocalFile } from "./place-local-file.ts";
import { repositoryGit } from "./repository-git.ts";
import type { Workspace } from "./resolve-workspaces.ts";
import { runLocalStep } from "./run-local-step.ts";
import type { CachedStepResult, StepCache } from "./step-cache.ts";
import {
  missingCommandHint,
  placementKey,
  type StepPlacement,
  StepPlacer,
  type StepRuntimeChoice,
} from "./step-placement.ts";
import {
  applyWorkspaceDiff,
  collectWorkspaceDiff,
  templateChangedFiles,
} from "./workspace-diff.ts";

/** src-cli's default `-timeout` for one workspace. */
export const DEFAULT_WORKSPACE_TIMEOUT_MS = 60 * 60 * 1000;

/**
 * How much of each stream a step result keeps (head and tail). Generous, because `step.stdout`
 * is what outputs are usually rendered from: a long JSON document on one line must survive
 * whole, so lines are only cut where the kept window would cut them anyway.
 */
const OUTPUT_HEAD_BYTES = 512 * 1024;
const OUTPUT_TAIL_BYTES = 512 * 1024;
const OUTPUT_MAX_LINE_BYTES = OUTPUT_HEAD_BYTES + OUTPUT_TAIL_BYTES;
/** The largest `step_output` event. */
const OUTPUT_EVENT_BYTES = 8 * 1024;
/** Where the checkout appears in a container, as in src-cli. */
const CONTAINER_WORK_DIRECTORY = "/work";

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
   * Which shell each image's `run` scripts get (bash when it has one), shared across the runs of
   * one process so an image is probed once; keyed by the image's id, so a rebuilt tag is probed
   * again.
   */
  containerShells?: Map<string, Promise<string>>;
  /** The directory holding the spec file; `mount` paths are relative to it. Default: cwd. */
  specDirectory?: string;
  /** Default "auto": a container when the step names one and a runtime works, else this machine. */
  runtime?: StepRuntimeChoice;
  /** The runtime for container steps, null for none; detected when needed if not given. */
  containerRuntime?: ContainerRuntime | null;
  /**
   * A detection made by the caller (once per process): its runtime, or why none works, which a
   * step that needs one reports. Used when `containerRuntime` is not given.
   */
  containerDetection?: ContainerRuntimeDetection | Promise<ContainerRuntimeDetection>;
  /**
   * Runs the steps of a `kubernetes` run as Jobs (config.json's `kubernetes`); such a step fails,
   * saying so, without it.
   */
  kubernetes?: KubernetesRunnerSource;
  /** The policy that decides what of `outerEnvironment` steps inherit. */
  environmentPolicy?: AgentEnvironmentPolicy;
  /** The environment steps start from (before the policy); default this process's. */
  outerEnvironment?: Readonly<Record<string, string | undefined>>;
  /**
   * Starts local steps: its environment policy and sandbox. Without one, steps run unconfined
   * with `environmentPolicy` over `outerEnvironment`.
   */
  launcher?: ProcessLauncher;
  /** For the whole workspace; default 60 minutes. */
  timeoutMs?: number;
  cache: StepCache;
  /** Run every step, ignoring (and replacing) cached results. */
  clearCache?: boolean;
  signal?: AbortSignal;
  onEvent?: (event: BatchRunEvent) => void;
  /**
   * The workspace job this run is: the model-provider token of its `codingAgent` steps is bound
   * to it, and it reaches the agent as `DECKHAND_JOB_ID`. Needed when a `codingAgent` step runs.
   */
  jobId?: string;
  /**
   * Lends the job access to the model-provider proxy: leased once, at the first `codingAgent`
   * step that runs, and released when the run ends however it ends. Needed when a
   * `codingAgent` step runs.
   */
  modelProvider?: ModelProviderAccess;
  /** Versions, models and install sources of the agents `codingAgent` steps name. */
  codingAgent?: CodingAgentOptions;
  /**
   * Deckhand's providers, for `codingAgent` steps of type `acp`; such a step fails, saying so,
   * without them.
   */
  acpAgents?: AcpAgentStepOptions;
}

/** Where steps run: the repository's checkout and the workspace's directory inside it. */
export interface StepCheckout {
  directory: string;
  workspaceDirectory: string;
}

export interface StepRecord {
  /** The step's index in the spec's `steps`. */
  stepIndex: number;
  outcome: BatchStepOutcome;
  runtime: BatchStepRuntime | null;
  /**
   * The shell that ran the script (`/usr/bin/bash`, `/bin/sh` in a container); null when the
   * step did not start.
   */
  shell: string | null;
  exitCode: number | null;
  durationMs: number;
  /** Bounded and redacted; "" for skipped and cached steps. */
  stdout: string;
  stderr: string;
  /** Where its result is cached (diff, outputs); null when it produced none (skipped, failed). */
  cacheKey: string | null;
}

export interface WorkspaceRunResult {
  workspace: BatchWorkspaceRef;
  status: BatchWorkspaceStatus;
  /** What went wrong; null when completed. */
  error: string | null;
  steps: StepRecord[];
  /** The result the changesets are built from: the last step that ran or came from the cache. */
  result: CachedStepResult | null;
}

interface StepPlan {
  stepIndex: number;
  step: Step;
  placement: StepPlacement;
  cacheKey: string;
}

/** The launcher a run's local steps start through: the given one, or an unconfined one. */
function stepLauncher(
  options: Pick<RunWorkspaceOptions, "launcher" | "environmentPolicy" | "outerEnvironment">,
): ProcessLauncher {
  return (
    options.launcher ??
    new ProcessLauncher({
      capability: { kind: "none", reason: "no sandbox was configured for this run" },
      policy: options.environmentPolicy ?? agentEnvironmentPolicy(),
      sourceEnvironment: options.outerEnvironment ?? process.env,
    })
  );
}

/** How events name a workspace. */
export function workspaceRef(workspace: Workspace): BatchWorkspaceRef {
  return {
    repository: workspace.repository.name,
    branch: workspace.branch,
    path: workspace.path,
    revision: workspace.revision,
  };
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
    RunWorkspaceOptions,
    | "workspace"
    | "spec"
    | "specDirectory"
    | "environmentPolicy"
    | "outerEnvironment"
    | "launcher"
    | "cache"
    | "runtime"
    | "containerRuntime"
    | "containerDetection"
  >,
): Promise<number> {
  const specDirectory = resolve(options.specDirectory ?? process.cwd());
  const runnerEnv = stepLauncher(options).inheritedEnvironment();
  // Counting pulls no image: a step whose image is not here has no result to find.
  const placer = stepPlacer(options, runnerEnv, "never");
  const plans = await planSteps(options, runnerEnv, specDirectory, placer);
  for (let position = plans.length - 1; position >= 0; position -= 1) {
    if ((await options.cache.get(plans[position]!.cacheKey)) !== undefined) return position + 1;
  }
  return 0;
}

function stepPlacer(
  options: Pick<RunWorkspaceOptions, "runtime" | "containerRuntime" | "containerDetection">,
  runnerEnv: Record<string, string>,
  pull: "missing" | "never",
): StepPlacer {
  return new StepPlacer({
    choice: options.runtime ?? "auto",
    ...(options.containerRuntime !== undefined
      ? { containerRuntime: options.containerRuntime }
      : {}),
    ...(options.containerDetection !== undefined
      ? { containerDetection: options.containerDetection }
      : {}),
    path: runnerEnv.PATH,
    pull,
  });
}

/**
 * Where each step of the workspace runs and its cache key, each key covering the steps before
 * it and where they run.
 */
async function planSteps(
  options: Pick<RunWorkspaceOptions, "workspace" | "spec">,
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

function stepTemplateResult(result: CachedStepResult | null): TemplateStepResult | undefined {
  if (result === null) return undefined;
  return {
    changedFiles: templateChangedFiles(result.files),
    stdout: result.stdout,
    stderr: result.stderr,
  };
}

function parseOutput(name: string, format: string | undefined, text: string): unknown {
  try {
    if (format === "json") return JSON.parse(text);
    if (format === "yaml") return parseYaml(text) ?? null;
  } catch (error) {
    throw new BatchesError(
      "step_failed",
      `output "${name}" is not valid ${format}: ${errorMessage(error)}; check the template that sets it`,
    );
  }
  return text;
}

const outputBounds = {
  headBytes: OUTPUT_HEAD_BYTES,
  tailBytes: OUTPUT_TAIL_BYTES,
  maxLineBytes: OUTPUT_MAX_LINE_BYTES,
};

/** A step's two output streams: kept bounded for the result, and passed on as events. */
class StepOutput {
  readonly stdout = new HeadTailBuffer(outputBounds);
  readonly stderr = new HeadTailBuffer(outputBounds);
  // One decoder per stream holds back a character split across reads or event chunks, so no
  // event ends in half a character.
  private readonly decoders = {
    stdout: new StringDecoder("utf8"),
    stderr: new StringDecoder("utf8"),
  };
  private readonly redact: (text: string) => string;
  private readonly emit: (stream: "stdout" | "stderr", text: string) => void;

  constructor(
    redact: (text: string) => string,
    emit: (stream: "stdout" | "stderr", text: string) => void,
  ) {
    this.redact = redact;
    this.emit = emit;
  }

  write(stream: "stdout" | "stderr", data: Buffer): void {
    this[stream].write(data);
    for (let start = 0; start < data.length; start += OUTPUT_EVENT_BYTES) {
      const text = this.decoders[stream].write(data.subarray(start, start + OUTPUT_EVENT_BYTES));
      if (text !== "") this.emit(stream, this.redact(text));
    }
  }

  text(stream: "stdout" | "stderr"): string {
    const rest = this.decoders[stream].end();
    if (rest !== "") this.emit(stream, this.redact(rest));
    this[stream].close();
    return this.redact(this[stream].snapshot().text);
  }
}

/**
 * The shell a container step's script runs in: `/bin/bash` when the image has one, otherwise
 * `/bin/sh`, as src-cli chooses, so scripts written for bash keep working in images that have it.
 * Probed with the step's mounts, since a mount can be what provides the shell.
 */
async function containerShell(
  runtime: ContainerRuntime,
  image: string,
  mounts: readonly ContainerMount[],
  signal: AbortSignal,
  shells: Map<string, Promise<string>>,
): Promise<string> {
  // Only the step's own mounts (files, mount:) could provide a shell, so they are part of the
  // key; the checkout and the repository are mounted at /work and at the repository's path.
  const id = (await inspectImage(runtime, image).catch(() => null))?.id ?? image;
  const key = `${id}\0${mounts.map((mount) => `${mount.source}:${mount.target}`).join("\0")}`;
  let shell = shells.get(key);
  if (shell === undefined) {
    shell = probeShell(runtime, image, mounts, signal);
    shells.set(key, shell);
    // A probe cut short by a cancel says nothing about the image.
    void shell.then(() => {
      if (signal.aborted) shells.delete(key);
    });
  }
  return shell;
}

async function probeShell(
  runtime: ContainerRuntime,
  image: string,
  mounts: readonly ContainerMount[],
  signal: AbortSignal,
): Promise<string> {
  try {
    const probe = await runContainer(runtime, {
      image,
      script: "exit 0",
      shell: "/bin/bash",
      mounts: mounts.map((mount) => ({ ...mount, readOnly: true })),
      signal,
      timeoutMs: 120_000,
    });
    return probe.exitCode === 0 ? "/bin/bash" : "/bin/sh";
  } catch {
    // The image cannot start at all; the step's own run reports why.
    return "/bin/sh";
  }
}

/**
 * The checkout is a git worktree: its `.git` is a file naming the repository's git directory by
 * its path on this machine. Mounting that directory read-only at the same path lets `git` in the
 * container read the repository (`git ls-files`, `git grep`, `git log`) as steps expect, without
 * letting a step change the user's repository. A path a mount cannot carry is left out.
 */
async function repositoryMount(
  checkoutDirectory: string,
  signal: AbortSignal,
): Promise<ContainerMount[]> {
  const { stdout } = await repositoryGit(
    checkoutDirectory,
    ["rev-parse", "--path-format=absolute", "--git-common-dir"],
    `finding the git directory of ${checkoutDirectory}`,
    { signal },
  );
  const directory = stdout.trim();
  if (mountBreakingCharacter(directory) !== undefined) return [];
  return [{ source: directory, target: directory, readOnly: true }];
}

/** A step that ran and exited non-zero; its message carries the step's stderr. */
class StepFailure extends Error {}

/**
 * Runs the workspace's steps in `options.checkout`, which must be a clean checkout at the
 * workspace's revision. Never throws for a failing step: the result says how the workspace ended.
 * The job's model-provider token, if a `codingAgent` step leased one, is revoked before the run
 * reports how it ended, whether it completed, failed, timed out or was cancelled.
 */
export async function runWorkspace(options: RunWorkspaceOptions): Promise<WorkspaceRunResult> {
  const jobModel = new JobModelProviderLease(options.modelProvider, options.jobId);
  try {
    return await runSteps(options, jobModel);
  } finally {
    // Already released when the run finished normally; this covers an unexpected throw.
    await jobModel.release();
  }
}

async function runSteps(
  options: RunWorkspaceOptions,
  jobModel: JobModelProviderLease,
): Promise<WorkspaceRunResult> {
  const { workspace, spec, cache } = options;
  const shells = options.containerShells ?? new Map<string, Promise<string>>();
  let checkout: StepCheckout | null =
    typeof options.checkout === "function" ? null : options.checkout;
  /** The cached diff the checkout must get before the next step runs. */
  let pendingDiff: string | null = null;
  const ensureCheckout = async (): Promise<StepCheckout> => {
    if (checkout === null && typeof options.checkout === "function")
      checkout = await options.checkout();
    const ready = checkout!;
    if (pendingDiff !== null) {
      await applyWorkspaceDiff(ready.directory, pendingDiff, signal);
      pendingDiff = null;
    }
    return ready;
  };
  const ref = workspaceRef(workspace);
  const emit = (event: BatchRunEvent) => options.onEvent?.(event);
  const specDirectory = resolve(options.specDirectory ?? process.cwd());
  const launcher = stepLauncher(options);
  const policy = launcher.policy;
  const runnerEnv = launcher.inheritedEnvironment();
  const timeoutMs = options.timeoutMs ?? DEFAULT_WORKSPACE_TIMEOUT_MS;
  const timeout = AbortSignal.timeout(timeoutMs);
  const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
  const records: StepRecord[] = [];
  const placer = stepPlacer(options, runnerEnv, "missing");
  /** The runner of Kubernetes steps; a step of a `kubernetes` run fails saying why there is none. */
  const kubernetesRunner = async () => {
    if (options.kubernetes === undefined) {
      throw new BatchesError(
        "invalid_config",
        "the run uses the kubernetes runtime and this executor has no `kubernetes` section in its config.json; add one (docs/operations/kubernetes.md) or run with --runtime auto",
      );
    }
    return options.kubernetes();
  };
  /** Per image, the platform its containers report, probed once per run. */
  const imagePlatforms = new Map<string, Promise<AgentPlatform>>();

  emit({ type: "workspace_started", workspace: ref });
  const finish = async (
    status: BatchWorkspaceStatus,
    error: string | null,
    result: CachedStepResult | null,
  ): Promise<WorkspaceRunResult> => {
    // Revoked before anyone hears the run ended; and no message may carry the token.
    await jobModel.release();
    const shown = error === null ? null : redactSecrets(error, jobModel.secrets);
    emit({ type: "workspace_finished", workspace: ref, status, error: shown });
    return { workspace: ref, status, error: shown, steps: records, result };
  };
  const interrupted = () =>
    timeout.aborted
      ? finish(
          "timed_out",
          `the workspace did not finish within ${timeoutMs} ms and was stopped`,
          null,
        )
      : finish("cancelled", "the run was cancelled", null);

  let previous: CachedStepResult | null = null;
  let outputs: Record<string, unknown> = {};
  let plans: StepPlan[];
  try {
    plans = await planSteps(options, runnerEnv, specDirectory, placer);
  } catch (error) {
    return finish("failed", `preparing the steps failed: ${errorMessage(error)}`, null);
  }

  let start = 0;
  if (options.clearCache !== true) {
    for (let position = plans.length - 1; position >= 0; position -= 1) {
      let cached: CachedStepResult | undefined;
      try {
        cached = await cache.get(plans[position]!.cacheKey);
        if (cached === undefined) continue;
        // A given checkout shows the result; one made on demand is made (and the diff written
        // out) only if a later step runs: the last step's result needs no checkout.
        if (checkout !== null || position < plans.length - 1) pendingDiff = cached.diff;
        if (checkout !== null) await ensureCheckout();
      } catch (error) {
        if (signal.aborted) return interrupted();
        return finish(
          "failed",
          `restoring the cached result of step ${plans[position]!.stepIndex} failed: ${errorMessage(error)}; run again with the cache cleared`,
          null,
        );
      }
      previous = cached;
      outputs = { ...cached.outputs };
      start = position + 1;
      for (const plan of plans.slice(0, start)) {
        recordNotRun(plan.stepIndex, "cached", plan.cacheKey);
      }
      break;
    }
  }

  const repository = {
    name: workspace.repository.name,
    branch: workspace.branch,
    fileMatches: workspace.searchResultPaths,
  };
  const batchChange = { name: spec.name, description: spec.description };

  for (const plan of plans.slice(start)) {
    const { stepIndex, step, placement } = plan;
    if (signal.aborted) return interrupted();
    const context = (current?: TemplateStepResult) =>
      createStepTemplateContext({
        repository,
        batchChange,
        outputs: outputs as Record<string, TemplateValue>,
        previousStep: stepTemplateResult(previous),
        ...(current ? { step: current } : {}),
        steps: {
          changedFiles: previous ? templateChangedFiles(previous.files) : undefined,
          path: workspace.path,
        },
      });
    const started = performance.now();
    let condition: boolean;
    try {
      condition =
        step.if === undefined
          ? true
          : typeof step.if === "boolean"
            ? step.if
            : renderTemplate(step.if, context()).trim() === "true";
    } catch (error) {
      return finish(
        "failed",
        `step ${stepIndex}: evaluating \`if:\` failed: ${errorMessage(error)}`,
        null,
      );
    }
    if (!condition) {
      recordNotRun(stepIndex, "skipped", null);
      continue;
    }

    let here: StepCheckout;
    try {
      here = await ensureCheckout();
    } catch (error) {
      if (signal.aborted) return interrupted();
      return finish("failed", `checking the workspace out failed: ${errorMessage(error)}`, null);
    }
    const record: StepRecord = {
      stepIndex,
      outcome: "failed",
      runtime: null,
      shell: null,
      exitCode: null,
      durationMs: 0,
      stdout: "",
      stderr: "",
      cacheKey: null,
    };
    records.push(record);
    const temporary = await mkdtemp(join(tmpdir(), "deckhand-step-"));
    const releases: (() => Promise<void>)[] = [];
    try {
      if (placement.problem !== null) throw placement.problem;
      const runtime = placement.runtime;
      if (placement.fallbackReason !== null) {
        emit({
          type: "step_runtime_fallback",
          workspace: ref,
          step_index: stepIndex,
          image: placement.image!,
          reason: placement.fallbackReason,
        });
      }
      // Run by id: the image the cache key names, even if its tag moved since.
      const image = placement.imageId;
      const containerRuntime = runtime === "container" ? (await placer.detection()).runtime : null;
      const kubernetes = runtime === "kubernetes" ? await kubernetesRunner() : null;
      const podCheckout = { source: here.directory, target: CONTAINER_WORK_DIRECTORY };
      record.runtime = runtime;
      const stepContext = context();
      let env: Record<string, string> = {};
      for (const [name, value] of Object.entries(resolveStepEnv(step.env, runnerEnv))) {
        env[name] = renderTemplate(value, stepContext);
      }
      let script: string;
      const agentWritable: string[] = [];
      const agentReadable: string[] = [];
      let network = launcher.stepNetwork();
      const acp = acpStepOf(step);
      let acpPrompt = "";
      if (acp !== null) {
        acpPrompt = renderTemplate(acp.prompt, stepContext);
        // What the step runs, for the run screen: the provider, its policy and the prompt.
        script = `# ${acp.provider} over ACP, permissions ${acp.permissions}\n${acpPrompt}`;
      } else if (step.codingAgent === undefined) {
        script = renderTemplate(step.run ?? "", stepContext);
      } else {
        let writable: string[];
        let installHosts: string[];
        let installPaths: string[];
        ({ script, env, writable, installHosts, installPaths } = await prepareCodingAgent(
          step,
          runtime,
          containerRuntime,
          image ?? placement.image,
          stepContext,
          env,
          temporary,
          podCheckout,
        ));
        agentWritable.push(...writable);
        agentReadable.push(...installPaths);
        // An agent reaches the model proxy and where it installs from, nothing else.
        network = { internet: false, modelProxy: true, allowHosts: installHosts };
      }
      const secrets = [
        ...policy.secretValues,
        ...jobModel.secrets,
        ...Object.entries({ ...runnerEnv, ...env })
          .filter(([name]) => looksLikeSecretName(name))
          .map(([, value]) => value),
      ];
      // An acp step leases the job's token while it runs: read the lease's secrets at each use.
      const redact = (text: string) => redactSecrets(text, [...secrets, ...jobModel.secrets]);
      const output = new StepOutput(redact, (stream, text) =>
        emit({ type: "step_output", workspace: ref, step_index: stepIndex, stream, text }),
      );
      const files: { target: string; source: string }[] = [];
      for (const [target, content] of Object.entries(step.files ?? {})) {
        const source = join(temporary, `file-${files.length}`);
        await writeFile(source, renderTemplate(content, stepContext), { mode: 0o600 });
        files.push({ target, source });
      }
      const mounts = (step.mount ?? []).map((mount) => ({
        target: mount.mountpoint,
        source: resolve(specDirectory, mount.path),
      }));

      const agentStep = step.codingAgent !== undefined;
      const stepMounts = [...files, ...mounts].map((mount) => ({ ...mount, readOnly: true }));
      // The rendered agent script is POSIX sh; a `run` script gets bash where there is one.
      const shell =
        runtime === "container"
          ? agentStep
            ? "/bin/sh"
            : await containerShell(containerRuntime!, image!, stepMounts, signal, shells)
          : runtime === "kubernetes"
            ? agentStep
              ? "/bin/sh"
              : await kubernetesShell(kubernetes!, placement.image!, podCheckout, signal, shells)
            : placement.shell!;
      record.shell = shell;
      emit({
        type: "step_started",
        workspace: ref,
        step_index: stepIndex,
        runtime,
        image: runtime === "local" ? null : step.container!,
        ...(runtime === "local" ? { sandbox: launcher.sandbox } : {}),
        shell,
        command: redact(script),
        env: redactEnv(env, {
          secretNames: Object.keys(env).filter(looksLikeSecretName),
          secretValues: secrets,
        }),
      });
      let exitCode: number | null;
      if (runtime === "container") {
        const workdir = posix.join(CONTAINER_WORK_DIRECTORY, workspace.path);
        const containerMounts: ContainerMount[] = [
          { source: here.directory, target: CONTAINER_WORK_DIRECTORY },
          ...(await repositoryMount(here.directory, signal)),
          ...stepMounts,
        ];
        const result = await runContainer(containerRuntime!, {
          image: image!,
          script,
          shell,
          // An agent reaches the model-provider proxy on this machine's loopback; other steps
          // keep the default, no network.
          ...(agentStep ? { network: "host" as const } : {}),
          workdir,
          mounts: containerMounts,
          env,
          signal,
          onOutput: (chunk) => output.write(chunk.stream, chunk.data),
        });
        exitCode = result.exitCode;
      } else if (runtime === "kubernetes") {
        exitCode = await runKubernetesStep({
          runner: kubernetes!,
          image: placement.image!,
          script,
          shell,
          checkoutDirectory: here.directory,
          checkoutTarget: CONTAINER_WORK_DIRECTORY,
          workdir: posix.join(CONTAINER_WORK_DIRECTORY, workspace.path),
          mounts: [...files, ...mounts],
          repositoryMount: await repositoryMount(here.directory, signal),
          env,
          agentStep,
          stepIndex,
          jobId: options.jobId,
          signal,
          onOutput: (stream, data) => output.write(stream, data),
        });
      } else {
        for (const placed of files) {
          releases.push(await placeLocalFile(placed.target, placed.source, stepIndex, "copy"));
        }
        for (const placed of mounts) {
          releases.push(await placeLocalFile(placed.target, placed.source, stepIndex, "link"));
        }
        if (acp !== null) {
          if (options.acpAgents === undefined) {
            throw new BatchesError(
              "coding_agent_unavailable",
              `step ${stepIndex} runs provider ${acp.provider} over ACP, and this executor was given no providers; run it on a Deckhand server or an executor with a data directory holding providers.json`,
            );
          }
          const ran = await runAcpAgentStep({
            provider: acp.provider,
            prompt: acpPrompt,
            permissions: acp.permissions,
            checkoutDirectory: here.directory,
            workspaceDirectory: here.workspaceDirectory,
            env: { ...runnerEnv, ...env },
            lease: () => jobModel.get(),
            secrets,
            signal,
            onOutput: (stream, data) => output.write(stream, data),
            options: options.acpAgents,
            launcher,
          });
          exitCode = ran.exitCode;
        } else {
          const result = await runLocalStep({
            script,
            shell,
            cwd: here.workspaceDirectory,
            env: { ...runnerEnv, ...env },
            launcher,
            profile: {
              writable: [here.directory, ...agentWritable],
              // Placed files live in this machine's temporary directory, which a sandbox
              // replaces with its own: they are shown at their paths, read-only.
              readable: [...[...files, ...mounts].map((placed) => placed.target), ...agentReadable],
              network,
            },
            signal,
            onOutput: (stream, data) => output.write(stream, data),
          });
          exitCode = result.exitCode;
        }
      }
      record.exitCode = exitCode;
      record.durationMs = performance.now() - started;
      record.stdout = output.text("stdout");
      record.stderr = output.text("stderr");
      if (signal.aborted) {
        emitFinished(record);
        return interrupted();
      }
      if (exitCode !== 0) {
        const hint = missingCommandHint(placement, exitCode);
        throw new StepFailure(
          `step ${stepIndex} ${exitCode === null ? "was killed by a signal" : `failed with exit code ${exitCode}`}${record.stderr.trim() === "" ? "" : `: ${record.stderr.trim()}`}${hint === null ? "" : `\n${hint}`}`,
        );
      }
      const changes = await collectWorkspaceDiff(here.directory, workspace.revision, signal);
      const current: CachedStepResult = {
        stepIndex,
        exitCode,
        diff: changes.diff,
        files: changes.files,
        outputs: {},
        stdout: record.stdout,
        stderr: record.stderr,
      };
      const outputContext = context(stepTemplateResult(current));
      for (const [name, declared] of Object.entries(step.outputs ?? {})) {
        outputs[name] = parseOutput(
          name,
          declared.format,
          renderTemplate(declared.value, outputContext),
        );
      }
      current.outputs = { ...outputs };
      await cache.put(plan.cacheKey, current);
      record.cacheKey = plan.cacheKey;
      previous = current;
      record.outcome = "run";
      record.durationMs = performance.now() - started;
      emitFinished(record);
    } catch (error) {
      record.durationMs = performance.now() - started;
      emitFinished(record);
      if (signal.aborted) return interrupted();
      const message =
        error instanceof StepFailure
          ? error.message
          : `step ${stepIndex} failed: ${errorMessage(error)}`;
      return finish("failed", message, null);
    } finally {
      for (const release of releases.reverse()) await release().catch(() => {});
      await rm(temporary, { recursive: true, force: true });
    }
  }
  return finish("completed", null, previous);

  /** A step answered from the cache or skipped by its `if:`: recorded and reported, not run. */
  function recordNotRun(stepIndex: number, outcome: "cached" | "skipped", cacheKey: string | null) {
    const record: StepRecord = {
      stepIndex,
      outcome,
      runtime: null,
      shell: null,
      exitCode: null,
      durationMs: 0,
      stdout: "",
      stderr: "",
      cacheKey,
    };
    records.push(record);
    emitFinished(record);
  }

  function emitFinished(record: StepRecord) {
    emit({
      type: "step_finished",
      workspace: ref,
      step_index: record.stepIndex,
      outcome: record.outcome,
      exit_code: record.exitCode,
      duration_ms: record.durationMs,
    });
  }

  /**
   * A `codingAgent` step's script and environment: the run's settings for its agent type, the
   * prompt templated like `run`, the platform it runs on, and the job's model-provider lease.
   */
  async function prepareCodingAgent(
    step: Step,
    runtime: BatchStepRuntime,
    containerRuntime: ContainerRuntime | null,
    image: string | null,
    stepContext: TemplateContext,
    env: Record<string, string>,
    temporary: string,
    podCheckout: { source: string; target: string },
  ): Promise<{
    script: string;
    env: Record<string, string>;
    writable: string[];
    installHosts: string[];
    installPaths: string[];
  }> {
    const { type, prompt } = step.codingAgent!;
    const settings = codingAgentSettings(options.codingAgent, type);
    const renderedPrompt = renderTemplate(prompt, stepContext);
    let platform: AgentPlatform;
    if (runtime !== "local") {
      let probed = imagePlatforms.get(image!);
      if (probed === undefined) {
        probed =
          runtime === "container"
            ? containerPlatform(containerRuntime!, image!, signal)
            : kubernetesPlatform(
                await kubernetesRunner(),
                image!,
                PLATFORM_PROBE,
                podCheckout,
                signal,
              );
        imagePlatforms.set(image!, probed);
      }
      platform = await probed;
    } else {
      platform = localPlatform();
    }
    const { lease, jobId } = await jobModel.get();
    const stateDirectory = join(temporary, "agent-state");
    const rendered = codingAgentScript({
      type,
      prompt: renderedPrompt,
      settings,
      platform,
      // A Job runs the image as a container does: the script is the same.
      runtime: runtime === "local" ? "local" : "container",
      image: runtime === "local" ? undefined : step.container,
      env,
      // The agent's own home for its state, removed with the step's temporary files: two
      // jobs' agents never share (and race on) state under the runner's HOME.
      stateDirectory,
      lease,
      jobId,
      options: options.codingAgent,
    });
    // In a sandbox, where the rest of the machine is read-only: its state, and its own version's
    // install directory (where the install lock lives), nothing of other agents or versions.
    const writable =
      runtime === "local"
        ? [stateDirectory, localAgentInstallDirectory(options.codingAgent, type, settings.version)]
        : [];
    return {
      ...rendered,
      writable,
      installHosts: installSourceHosts(settings.installSource),
      installPaths: installSourcePaths(settings.installSource),
    };
  }

  /** An `acp` step's provider, prompt (not yet templated) and policy; null for other steps. */
  function acpStepOf(step: Step) {
    const agent = step.codingAgent;
    if (agent?.type !== ACP_AGENT_TYPE || agent.provider === undefined) return null;
    return {
      provider: agent.provider,
      prompt: agent.prompt,
      permissions:
        agent.permissions ?? options.acpAgents?.defaultPermissions ?? DEFAULT_ACP_STEP_PERMISSIONS,
    };
  }
}
