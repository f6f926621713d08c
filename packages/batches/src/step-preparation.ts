// How a step is made ready to run, in one place: its template context, its `if:`, its
// environment, its script (a `run:` templated, a `codingAgent:` agent's install-and-run script, an
// `acp` step's prompt), its files and what it may reach, and afterwards its `outputs`. The step
// loop prepares every step here before a runner runs it.
import { writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import {
  ACP_AGENT_TYPE,
  type AgentPlatform,
  type BatchSpec,
  BatchSpecError,
  createStepTemplateContext,
  defaultAgentRegistry,
  renderTemplate,
  resolveStepEnv,
  type Step,
  type TemplateContext,
  type TemplateStepResult,
  type TemplateValue,
} from "@deckhand/batch-spec";
import { errorMessage } from "@deckhand/errors";
import type { ProcessLauncher } from "@deckhand/sandbox";
import { looksLikeSecretName, redactSecrets } from "@deckhand/secrets";
import type { AcpStepPermissions } from "@deckhand/wire";
import { parse as parseYaml } from "yaml";
import { DEFAULT_ACP_STEP_PERMISSIONS } from "./acp-step-options.ts";
import { BatchesError } from "./batches-error.ts";
import {
  type CodingAgentOptions,
  codingAgentScript,
  codingAgentSettings,
  installSourceHosts,
  installSourcePaths,
  type JobModelProviderLease,
  localAgentInstallDirectory,
  renderAgentScript,
} from "./coding-agent-step.ts";
import type { CachedStepResult } from "./step-cache.ts";
import { StepOutput, type StepStream } from "./step-output.ts";
import type { StepPlan } from "./step-plan.ts";
import type {
  PreparedAgentTurn,
  PreparedStep,
  PreparedStepKind,
  StepAccess,
  StepCheckout,
  StepFile,
  StepRunner,
} from "./step-runner.ts";
import { templateChangedFiles } from "./workspace-diff.ts";

/** A step result as templates see it (`previous_step`, `step`). */
export function stepTemplateResult(
  result: CachedStepResult | null,
): TemplateStepResult | undefined {
  if (result === null) return undefined;
  return {
    changedFiles: templateChangedFiles(result.files),
    stdout: result.stdout,
    stderr: result.stderr,
  };
}

export interface StepTemplateInput {
  repository: { name: string; branch: string; fileMatches?: readonly string[] };
  batchChange: { name: string; description?: string | undefined };
  /** The outputs of the steps before. */
  outputs: Readonly<Record<string, unknown>>;
  /** The result of the step before (run or cached); null for the first. */
  previous?: CachedStepResult | null;
  /** The step's own result, for its `outputs`. */
  current?: TemplateStepResult;
  /** The workspace's path in the repository. */
  path?: string;
}

/** The template context of a step's `run`, `env`, `files`, `if`, `outputs` and prompt. */
export function stepTemplateContext(input: StepTemplateInput): TemplateContext {
  const previous = input.previous ?? null;
  return createStepTemplateContext({
    repository: {
      name: input.repository.name,
      branch: input.repository.branch,
      ...(input.repository.fileMatches ? { fileMatches: [...input.repository.fileMatches] } : {}),
    },
    batchChange: input.batchChange,
    outputs: input.outputs as Record<string, TemplateValue>,
    previousStep: stepTemplateResult(previous),
    ...(input.current ? { step: input.current } : {}),
    steps: {
      changedFiles: previous ? templateChangedFiles(previous.files) : undefined,
      path: input.path ?? "",
    },
  });
}

/** Whether a step's `if:` lets it run. */
export function stepCondition(step: Step, context: TemplateContext): boolean {
  if (step.if === undefined) return true;
  if (typeof step.if === "boolean") return step.if;
  return renderTemplate(step.if, context).trim() === "true";
}

/**
 * A step's `env`, templated: names listed alone take their value from `inherited` (what steps
 * inherit of the process's environment); a preview passes none, so they stay empty.
 */
export function renderStepEnv(
  step: Step,
  inherited: Readonly<Record<string, string>>,
  context: TemplateContext,
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(resolveStepEnv(step.env, inherited))) {
    env[name] = renderTemplate(value, context);
  }
  return env;
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

/** The outputs after a step: those before, with the step's own `outputs` rendered on top. */
export function renderStepOutputs(
  step: Step,
  outputs: Readonly<Record<string, unknown>>,
  context: TemplateContext,
): Record<string, unknown> {
  const next = { ...outputs };
  for (const [name, declared] of Object.entries(step.outputs ?? {})) {
    next[name] = parseOutput(name, declared.format, renderTemplate(declared.value, context));
  }
  return next;
}

/** Whether a step runs a Deckhand provider over ACP (a `codingAgent` of type `acp`). */
export function isAcpStep(step: Step): boolean {
  return step.codingAgent?.type === ACP_AGENT_TYPE && step.codingAgent.provider !== undefined;
}

/** What every step of one workspace run is prepared with. */
export interface StepPreparationOptions {
  /** The directory `mount:` paths are relative to. */
  specDirectory: string;
  /** What steps inherit of the process's environment once the policy is applied. */
  inherited: Readonly<Record<string, string>>;
  /** The process's launcher: its environment policy's secrets, and a local step's network. */
  launcher: ProcessLauncher;
  codingAgent: CodingAgentOptions | undefined;
  /** The policy of `acp` steps that name none. */
  acpPermissions: AcpStepPermissions | undefined;
  jobModel: JobModelProviderLease;
  signal: AbortSignal;
}

export interface StepToPrepare {
  plan: StepPlan;
  context: TemplateContext;
  checkout: StepCheckout;
  workspacePath: string;
  runner: StepRunner;
  /** The step's own temporary directory (its rendered files, an agent's state). */
  temporary: string;
  /** Told each piece of output, redacted, as it comes. */
  onOutput: (stream: StepStream, text: string) => void;
}

export interface PreparedStepRun {
  step: PreparedStep;
  /** The step's output, bounded and redacted. */
  output: StepOutput;
  /** Hides every secret value the step's output or command could show. */
  redact: (text: string) => string;
}

interface StepCommand {
  kind: PreparedStepKind;
  script: string;
  agent: PreparedAgentTurn | null;
  env: Record<string, string>;
  access: StepAccess;
}

export class StepPreparation {
  readonly #options: StepPreparationOptions;

  constructor(options: StepPreparationOptions) {
    this.#options = options;
  }

  async prepare(input: StepToPrepare): Promise<PreparedStepRun> {
    const { plan, context } = input;
    const { inherited, launcher, jobModel, signal } = this.#options;
    const command = await this.#command(input, renderStepEnv(plan.step, inherited, context));
    const secrets = [
      ...launcher.policy.secretValues,
      ...jobModel.secrets,
      ...Object.entries({ ...inherited, ...command.env })
        .filter(([name]) => looksLikeSecretName(name))
        .map(([, value]) => value),
    ];
    // An acp step leases the job's token while it runs: read the lease's secrets at each use.
    const redact = (text: string) => redactSecrets(text, [...secrets, ...jobModel.secrets]);
    const output = new StepOutput(redact, input.onOutput);
    const unshelled: Omit<PreparedStep, "shell"> = {
      stepIndex: plan.stepIndex,
      kind: command.kind,
      placement: plan.placement,
      script: command.script,
      agent: command.agent,
      env: command.env,
      checkout: input.checkout,
      workspacePath: input.workspacePath,
      files: await this.#files(plan.step, context, input.temporary),
      mounts: (plan.step.mount ?? []).map((mount) => ({
        target: mount.mountpoint,
        source: resolve(this.#options.specDirectory, mount.path),
      })),
      access: command.access,
      secrets,
      signal,
      output: (stream, data) => output.write(stream, data),
    };
    const shell = await input.runner.shell(unshelled);
    return { step: { ...unshelled, shell }, output, redact };
  }

  /** What the step runs: its script (or agent turn), its environment and what it may reach. */
  async #command(input: StepToPrepare, env: Record<string, string>): Promise<StepCommand> {
    const { step } = input.plan;
    const access = {
      writable: [],
      readable: [],
      network: this.#options.launcher.stepNetwork(),
    };
    if (isAcpStep(step)) {
      const agent = {
        provider: step.codingAgent!.provider!,
        prompt: renderTemplate(step.codingAgent!.prompt, input.context),
        permissions:
          step.codingAgent!.permissions ??
          this.#options.acpPermissions ??
          DEFAULT_ACP_STEP_PERMISSIONS,
      };
      // What the step runs, for the run screen: the provider, its policy and the prompt.
      const script = `# ${agent.provider} over ACP, permissions ${agent.permissions}\n${agent.prompt}`;
      return { kind: "acp", script, agent, env, access };
    }
    if (step.codingAgent === undefined) {
      const script = renderTemplate(step.run ?? "", input.context);
      return { kind: "run", script, agent: null, env, access };
    }
    return this.#codingAgent(input, env);
  }

  /**
   * A `codingAgent` step's script and environment: the run's settings for its agent type, the
   * prompt templated like `run`, the platform it runs on, and the job's model-provider lease.
   */
  async #codingAgent(input: StepToPrepare, env: Record<string, string>): Promise<StepCommand> {
    const { step, placement } = input.plan;
    const { codingAgent, jobModel, signal } = this.#options;
    const { type, prompt } = step.codingAgent!;
    const settings = codingAgentSettings(codingAgent, type);
    const renderedPrompt = renderTemplate(prompt, input.context);
    const platform = await input.runner.platform(placement, input.checkout, signal);
    const { lease, jobId } = await jobModel.get();
    const stateDirectory = join(input.temporary, "agent-state");
    const rendered = codingAgentScript({
      type,
      prompt: renderedPrompt,
      settings,
      platform,
      // A Job runs the image as a container does: the script is the same.
      runtime: placement.runtime === "local" ? "local" : "container",
      image: placement.runtime === "local" ? undefined : step.container,
      env,
      // The agent's own home for its state, removed with the step's temporary files: two
      // jobs' agents never share (and race on) state under the runner's HOME.
      stateDirectory,
      lease,
      jobId,
      options: codingAgent,
    });
    return {
      kind: "codingAgent",
      script: rendered.script,
      agent: null,
      env: rendered.env,
      access: {
        // In a sandbox, where the rest of the machine is read-only: its state, and its own
        // version's install directory (where the install lock lives), nothing of other agents.
        writable:
          placement.runtime === "local"
            ? [stateDirectory, localAgentInstallDirectory(codingAgent, type, settings.version)]
            : [],
        readable: installSourcePaths(settings.installSource),
        // An agent reaches the model proxy and where it installs from, nothing else.
        network: {
          internet: false,
          modelProxy: true,
          allowHosts: installSourceHosts(settings.installSource),
        },
      },
    };
  }

  /** The step's `files:`, templated into private temporary files. */
  async #files(step: Step, context: TemplateContext, temporary: string): Promise<StepFile[]> {
    const files: StepFile[] = [];
    for (const [target, content] of Object.entries(step.files ?? {})) {
      const source = join(temporary, `file-${files.length}`);
      await writeFile(source, renderTemplate(content, context), { mode: 0o600 });
      files.push({ target, source });
    }
    return files;
  }
}

export interface CodingAgentPreview {
  spec: BatchSpec;
  /** The spec's file, for messages. */
  file: string;
  /** The step, as in `steps[N]`. */
  stepIndex: number;
  /** The repository (and branch) templates see. */
  repository: { name: string; branch: string };
  version: string;
  model: string;
  platform: AgentPlatform;
  /** `release`: the agent's own release downloads; `npm`: the npm registry. */
  installSource: "release" | "npm";
  modelProviderUrl: string;
}

/**
 * The script a `codingAgent` step would run in one repository, secrets redacted: its prompt and
 * env templated as a run templates them (outputs of earlier steps, which exist only at run time,
 * as placeholders; names the env takes from the runner, empty) and rendered by the same
 * renderer. What `deckhand batch render` prints; nothing runs.
 */
export function previewCodingAgentScript(preview: CodingAgentPreview): string {
  const { spec, stepIndex: index } = preview;
  const steps = spec.steps ?? [];
  const step = steps[index];
  if (step === undefined) {
    throw new BatchSpecError(
      "invalid_argument",
      `${preview.file} has ${steps.length} step${steps.length === 1 ? "" : "s"}; --step ${index} is not one of them (steps are counted from 0)`,
    );
  }
  if (step.codingAgent === undefined) {
    throw new BatchSpecError(
      "invalid_argument",
      `steps[${index}] is a run step; render prints codingAgent steps (a run step's script is its "run" text)`,
    );
  }
  if (isAcpStep(step)) {
    throw new BatchSpecError(
      "invalid_argument",
      `steps[${index}] runs provider ${step.codingAgent.provider ?? "(none named)"} over ACP: it has no script to print; the server starts the provider's agent in the workspace and sends it the prompt`,
    );
  }
  // Outputs of earlier steps exist only at run time: a preview shows where they go.
  const outputs: Record<string, string> = {};
  for (const earlier of steps.slice(0, index)) {
    for (const name of Object.keys(earlier.outputs ?? {})) outputs[name] = `<outputs.${name}>`;
  }
  const context = stepTemplateContext({
    repository: preview.repository,
    batchChange: { name: spec.name, description: spec.description },
    outputs,
  });
  let prompt: string;
  let env: Record<string, string>;
  try {
    prompt = renderTemplate(step.codingAgent.prompt, context);
    // Names passed through from the runner stay empty: this machine's environment is not the
    // runner's, and its values must not end up in printed output.
    env = renderStepEnv(step, {}, context);
  } catch (error) {
    if (error instanceof BatchSpecError) {
      throw new BatchSpecError(
        error.code,
        `steps[${index}]: ${error.message} (a preview has no step results or output values)`,
        { cause: error },
      );
    }
    throw error;
  }
  const definition = defaultAgentRegistry.get(step.codingAgent.type);
  const rendered = renderAgentScript({
    type: step.codingAgent.type,
    prompt,
    settings: {
      version: preview.version,
      model: preview.model,
      installSource:
        preview.installSource === "npm"
          ? { kind: "npm" }
          : { kind: "release", baseUrl: definition?.defaultReleaseBaseUrl ?? "" },
    },
    platform: preview.platform,
    modelProviderUrl: preview.modelProviderUrl,
    image: step.container ?? "",
    env,
  });
  if (!rendered.ok) throw rendered.error;
  return rendered.value.redactedScript;
}
