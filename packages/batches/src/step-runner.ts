// The seam between the step loop (run-workspace.ts) and where a step's process runs. The loop
// prepares each step (step-preparation.ts: its script, environment, files and what it may reach)
// and hands it to the runner its placement names: this machine (local-step-runner.ts), a
// container (container-step-runner.ts), a Kubernetes Job (kubernetes-step-runner.ts) or a
// Deckhand provider over ACP (acp-step-runner.ts). A runner for another place implements this
// interface and is chosen in run-step.ts; nothing else of the loop changes.
import type { AgentPlatform } from "@deckhand/batch-spec";
import type { NetworkAccess } from "@deckhand/sandbox";
import type { AcpStepPermissions } from "@deckhand/wire";
import type { StepStream } from "./step-output.ts";
import type { StepPlacement } from "./step-placement.ts";

/** Where steps run: the repository's checkout and the workspace's directory inside it. */
export interface StepCheckout {
  directory: string;
  workspaceDirectory: string;
}

/** A file a step sees read-only at `target`: a rendered `files:` entry or a `mount:` path. */
export interface StepFile {
  target: string;
  /** Where it is on this machine. */
  source: string;
}

/** What a step runs: a `run:` script, a `codingAgent:` agent's script, or an ACP provider. */
export type PreparedStepKind = "run" | "codingAgent" | "acp";

/** An `acp` step's agent: the provider, the templated prompt and the permission policy. */
export interface PreparedAgentTurn {
  provider: string;
  prompt: string;
  permissions: AcpStepPermissions;
}

/** What a step may reach beyond its checkout (which it may always change). */
export interface StepAccess {
  /** Directories it writes: a coding agent's state and its version's install directory. */
  writable: readonly string[];
  /** Directories it reads wherever they lie: where an agent is installed from. */
  readable: readonly string[];
  network: NetworkAccess;
}

/** One step, ready to run: everything a runner needs, nothing it must work out of the spec. */
export interface PreparedStep {
  /** The step's index in the spec's `steps`. */
  stepIndex: number;
  kind: PreparedStepKind;
  /** Where it runs (this machine with which shell, or an image by id), chosen before any step. */
  placement: StepPlacement;
  /** The script, templated; for an `acp` step, what the run screen shows of it. */
  script: string;
  /** The shell `script` runs with (the runner's `shell` chose it). */
  shell: string;
  /** An `acp` step's agent; null for others. */
  agent: PreparedAgentTurn | null;
  /**
   * The step's own variables, templated (an agent's with its job's model-provider token and id):
   * a runner sets them over what the process inherits.
   */
  env: Readonly<Record<string, string>>;
  checkout: StepCheckout;
  /** The workspace's path in the repository; "" for its root. */
  workspacePath: string;
  /** The rendered `files:`, in temporary files of the step. */
  files: readonly StepFile[];
  /** The `mount:` paths, in the spec's directory. */
  mounts: readonly StepFile[];
  access: StepAccess;
  /** Values no output may show (Deckhand's secrets, the job's token): for runners that log. */
  secrets: readonly string[];
  /** Aborted when the workspace is cancelled or times out: the runner stops the step. */
  signal: AbortSignal;
  /** Where the step's output goes as it comes (the loop bounds, redacts and reports it). */
  output(stream: StepStream, data: Buffer): void;
}

/**
 * What `probe` finds out about an image (the shell its scripts get), once per key of `found`,
 * which a process's runs share. A probe cut short by a cancel says nothing about the image: its
 * answer is forgotten, and the next step probes again.
 */
export function probedOnce<T>(
  found: Map<string, Promise<T>>,
  key: string,
  signal: AbortSignal,
  probe: () => Promise<T>,
): Promise<T> {
  let answer = found.get(key);
  if (answer === undefined) {
    answer = probe();
    found.set(key, answer);
    void answer.then(() => {
      if (signal.aborted) found.delete(key);
    });
  }
  return answer;
}

/** How a step's process ended: its exit code, null when it was killed. */
export interface StepExit {
  exitCode: number | null;
}

/** Runs prepared steps in one place; one instance serves every step of a workspace run. */
export interface StepRunner {
  /**
   * The platform a `codingAgent` step's agent is installed for, where the step would run (a
   * runner that probes in a pod sees the checkout there).
   */
  platform(
    placement: StepPlacement,
    checkout: StepCheckout,
    signal: AbortSignal,
  ): Promise<AgentPlatform>;
  /** The shell a step's script runs with, as the step's `step_started` event reports it. */
  shell(step: Omit<PreparedStep, "shell">): Promise<string>;
  /**
   * Runs the step to its end. A step that ran and failed resolves with its exit code; a step
   * that could not start (a file it cannot place, a missing runtime) rejects.
   */
  run(step: PreparedStep): Promise<StepExit>;
}
