// Runs `codingAgent` steps of type `acp`: a Deckhand provider's agent started on this machine, in
// the workspace (acp-agent-step.ts), with the step's files placed as a local step's are; so it is
// a local runner whose process is the agent rather than a script.
import type { ProcessLauncher } from "@deckhand/sandbox";
import type { AcpAgentStepOptions } from "./acp-step-options.ts";
import { BatchesError } from "./batches-error.ts";
import type { ModelProviderJobLease } from "./coding-agent-step.ts";
import { LocalStepRunner, withPlacedFiles } from "./local-step-runner.ts";
import type { PreparedStep, StepExit } from "./step-runner.ts";

export interface AcpStepRunnerOptions {
  launcher: ProcessLauncher;
  /** What steps inherit of the process's environment once the policy is applied. */
  inherited: Readonly<Record<string, string>>;
  /** The process's providers; without them an `acp` step fails, saying where to run it. */
  acpAgents: AcpAgentStepOptions | undefined;
  /** The job's model-provider access, leased when the agent reaches models through the proxy. */
  lease: () => Promise<{ lease: ModelProviderJobLease; jobId: string }>;
}

export class AcpStepRunner extends LocalStepRunner {
  readonly #options: AcpStepRunnerOptions;

  constructor(options: AcpStepRunnerOptions) {
    super(options.launcher, options.inherited);
    this.#options = options;
  }

  override run(step: PreparedStep): Promise<StepExit> {
    const { acpAgents } = this.#options;
    const agent = step.agent!;
    return withPlacedFiles(step, async () => {
      if (acpAgents === undefined) {
        throw new BatchesError(
          "coding_agent_unavailable",
          `step ${step.stepIndex} runs provider ${agent.provider} over ACP, and this executor was given no providers; run it on a Deckhand server or an executor with a data directory holding providers.json`,
        );
      }
      // Loaded by the first acp step: the ACP client and the workspace agent are for it alone.
      const { runAcpAgentStep } = await import("./acp-agent-step.ts");
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
