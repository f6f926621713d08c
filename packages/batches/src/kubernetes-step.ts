// Steps of a run with `--runtime kubernetes`: each step that names an image runs as a Kubernetes
// Job (@deckhand/kubernetes-runtime) on the executor's work volume, seeing the checkout at
// /work as in a container. The runner is made once per service, on first use, so a process that
// never runs such a step never loads the Kubernetes client.
import type { AgentPlatform } from "@deckhand/batch-spec";
import type { KubernetesStepRunner } from "@deckhand/kubernetes-runtime";
import type { KubernetesRuntimeConfig } from "@deckhand/kubernetes-runtime/config";

/** Makes (once) the runner of Kubernetes steps; rejects saying what is wrong with the config. */
export type KubernetesRunnerSource = () => Promise<KubernetesStepRunner>;

/** A runner source for config.json's `kubernetes`, loading the client on first use. */
export function kubernetesRunnerSource(
  config: KubernetesRuntimeConfig,
  environment: Readonly<Record<string, string | undefined>> = process.env,
): KubernetesRunnerSource {
  let runner: Promise<KubernetesStepRunner> | undefined;
  return () => {
    runner ??= import("@deckhand/kubernetes-runtime").then((runtime) => {
      const settings = runtime.kubernetesRuntimeSettings(config, environment);
      return new runtime.KubernetesStepRunner(
        settings,
        runtime.loadKubeConfig(settings, environment),
      );
    });
    return runner;
  };
}

/** The label a NetworkPolicy selects agent steps by, to let them reach the model proxy. */
export const KUBERNETES_NETWORK_LABEL = "deckhand.dev/network";

export interface KubernetesStepInput {
  runner: KubernetesStepRunner;
  image: string;
  script: string;
  shell: string;
  checkoutDirectory: string;
  /** Where the checkout appears in the pod (`/work`). */
  checkoutTarget: string;
  workdir: string;
  /** The step's files and mounts, read-only. */
  mounts: readonly { source: string; target: string }[];
  /** The repository's git directory: given to the pod when it is on the work volume. */
  repositoryMount: readonly { source: string; target: string }[];
  env: Record<string, string>;
  /** A `codingAgent` step: its pod is labelled so a NetworkPolicy can let it reach the proxy. */
  agentStep: boolean;
  stepIndex: number;
  jobId: string | undefined;
  signal: AbortSignal;
  onOutput: (stream: "stdout" | "stderr", data: Buffer) => void;
}

/** Runs one step as a Job and returns its exit code (null when it was cancelled). */
export async function runKubernetesStep(input: KubernetesStepInput): Promise<number | null> {
  const result = await input.runner.run({
    image: input.image,
    script: input.script,
    shell: input.shell,
    checkout: { source: input.checkoutDirectory, target: input.checkoutTarget },
    workdir: input.workdir,
    mounts: [
      ...input.mounts.map((mount) => ({ ...mount, readOnly: true })),
      ...input.repositoryMount.map((mount) => ({ ...mount, readOnly: true, optional: true })),
    ],
    env: input.env,
    labels: {
      "deckhand.dev/step-index": String(input.stepIndex),
      [KUBERNETES_NETWORK_LABEL]: input.agentStep ? "model-proxy" : "none",
    },
    annotations: input.jobId === undefined ? {} : { "deckhand.dev/job-id": input.jobId },
    signal: input.signal,
    onOutput: input.onOutput,
  });
  return result.exitCode;
}

/**
 * The shell a `run` script gets in an image, as for containers: `/bin/bash` when the image has
 * one, else `/bin/sh` — found out with a one-line Job, once per image and process.
 */
export function kubernetesShell(
  runner: KubernetesStepRunner,
  image: string,
  checkout: { source: string; target: string },
  signal: AbortSignal,
  shells: Map<string, Promise<string>>,
): Promise<string> {
  const key = `kubernetes\0${image}`;
  let shell = shells.get(key);
  if (shell === undefined) {
    shell = runner
      .run({
        image,
        script: "exit 0",
        shell: "/bin/bash",
        checkout,
        workdir: checkout.target,
        signal,
      })
      .then(
        (probe) => (probe.exitCode === 0 ? "/bin/bash" : "/bin/sh"),
        // The image cannot start at all; the step's own run reports why.
        () => "/bin/sh",
      );
    shells.set(key, shell);
    // A probe cut short by a cancel says nothing about the image.
    void shell.then(() => {
      if (signal.aborted) shells.delete(key);
    });
  }
  return shell;
}

/** The platform an image reports (`uname -m`, libc), probed with a Job as for containers. */
export async function kubernetesPlatform(
  runner: KubernetesStepRunner,
  image: string,
  probeScript: string,
  checkout: { source: string; target: string },
  signal: AbortSignal,
): Promise<AgentPlatform> {
  let output = "";
  try {
    const probe = await runner.run({
      image,
      script: probeScript,
      checkout,
      workdir: checkout.target,
      signal,
      onOutput: (stream, data) => {
        if (stream === "stdout") output += data.toString("utf8");
      },
    });
    const [machine, libc] = output.trim().split(/\s+/);
    if (probe.exitCode === 0 && machine !== undefined && machine !== "") {
      return { os: "linux", arch: machine, libc: libc === "musl" ? "musl" : "glibc" };
    }
  } catch {
    // The image cannot start at all; the step's own run reports why.
  }
  return { os: "linux", arch: process.arch };
}
