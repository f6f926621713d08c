// Runs `codingAgent` steps of type `acp`: a Deckhand provider's agent started on this machine, in
// the workspace (acp-agent-step.ts), with the step's files placed as a local step's are.
import type { AgentPlatform } from "@deckhand/batch-spec";
import type { ProcessLauncher } from "@deckhand/sandbox";
import { type AcpAgentStepOptions, runAcpAgentStep } from "./acp-agent-step.ts";
import { BatchesError } from "./batches-error.ts";
import { localPlatform, type ModelProviderJobLease } from "./coding-agent-step.ts";
import { withPlacedFiles } from "./local-step-runner.ts";
import type { PreparedStep, StepExit, StepRunner } from "./step-runner.ts";

export interface AcpStepRunnerOptions {
  launcher: ProcessLauncher;
  /** What steps inherit of the process's environment once the policy is applied. */
  inherited: Readonly<Record<string, string>>;
  /** The process's providers; without them an `acp` step fails, saying where to run it. */
  acpAgents: AcpAgentStepOptions | undefined;
  /** The job's model-provider access, leased when the agent reaches models through the proxy. */
  lease: () => Promise<{ lease: ModelProviderJobLease; jobId: string }>;
}

export class AcpStepRunner implements StepRunner {
  readonly #options: AcpStepRunnerOptions;

  constructor(options: AcpStepRunnerOptions) {
    this.#options = options;
  }

  async platform(): Promise<AgentPlatform> {
    return localPlatform();
  }

  async shell(step: Omit<PreparedStep, "shell">): Promise<string> {
    return step.placement.shell!;
  }

  run(step: PreparedStep): Promise<StepExit> {
    const { acpAgents } = this.#options;
    const agent = step.agent!;
    return withPlacedFiles(step, async () => {
      if (acpAgents === undefined) {
        throw new BatchesError(
          "coding_agent_unavailable",
          `step ${step.stepIndex} runs provider ${agent.provider} over ACP, and this executor was given no providers; run it on a Deckhand server or an executor with a data directory holding providers.json`,
        );
      }
      const ran = await runAcpAgentStep({
        provider: agent.provider,
        prompt: agent.prompt,
        permissions: agent.permissions,
        checkoutDirectory: step.checkout.directory,
        workspaceDirectory: step.checkout.workspaceDirectory,
        env: { ...this.#options.inherited, ...step.env },
        lease: this.#options.lease,
        secrets: step.secrets,
        signal: step.signal,
        onOutput: step.output,
        options: acpAgents,
        launcher: this.#options.launcher,
      });
      return { exitCode: ran.exitCode };
    });
  }
}
