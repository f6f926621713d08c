// Runs steps on this machine, through the process's launcher (its environment policy and
// sandbox): the step's `files` and `mount`s are placed at their paths while it runs (a local
// step has no container to mount them into), then its script runs in its process group.
import type { AgentPlatform } from "@deckhand/batch-spec";
import type { ProcessLauncher } from "@deckhand/sandbox";
import { localPlatform } from "./coding-agent-step.ts";
import { placeLocalFile } from "./place-local-file.ts";
import { runLocalStep } from "./run-local-step.ts";
import type { PreparedStep, StepExit, StepRunner } from "./step-runner.ts";

/**
 * Places the step's files (copies) and mounts (links) at their paths on this machine, runs
 * `body`, and removes them again however it ends.
 */
export async function withPlacedFiles<T>(step: PreparedStep, body: () => Promise<T>): Promise<T> {
  const releases: (() => Promise<void>)[] = [];
  try {
    for (const placed of step.files) {
      releases.push(await placeLocalFile(placed.target, placed.source, step.stepIndex, "copy"));
    }
    for (const placed of step.mounts) {
      releases.push(await placeLocalFile(placed.target, placed.source, step.stepIndex, "link"));
    }
    return await body();
  } finally {
    for (const release of releases.reverse()) await release().catch(() => {});
  }
}

export class LocalStepRunner implements StepRunner {
  readonly #launcher: ProcessLauncher;
  readonly #inherited: Readonly<Record<string, string>>;

  /** `inherited`: what steps inherit of the process's environment once the policy is applied. */
  constructor(launcher: ProcessLauncher, inherited: Readonly<Record<string, string>>) {
    this.#launcher = launcher;
    this.#inherited = inherited;
  }

  async platform(): Promise<AgentPlatform> {
    return localPlatform();
  }

  async shell(step: Omit<PreparedStep, "shell">): Promise<string> {
    return step.placement.shell!;
  }

  run(step: PreparedStep): Promise<StepExit> {
    return withPlacedFiles(step, () =>
      runLocalStep({
        script: step.script,
        shell: step.shell,
        cwd: step.checkout.workspaceDirectory,
        env: { ...this.#inherited, ...step.env },
        launcher: this.#launcher,
        profile: {
          writable: [step.checkout.directory, ...step.access.writable],
          // Placed files live in this machine's temporary directory, which a sandbox replaces
          // with its own: they are shown at their paths, read-only.
          readable: [
            ...[...step.files, ...step.mounts].map((placed) => placed.target),
            ...step.access.readable,
          ],
          network: step.access.network,
        },
        signal: step.signal,
        onOutput: step.output,
      }),
    );
  }
}
