// Runs the steps of a run with `--runtime kubernetes`: each step that names an image runs as a
// Kubernetes Job (@deckhand/kubernetes-runtime) on the executor's work volume, seeing the checkout
// at /work as in a container, the workspace's directory as working directory and the step's files
// and mounts read-only at their targets. The cluster's runner is made once per process, on first
// use, so a process that never runs such a step never loads the Kubernetes client.
import { posix } from "node:path";
import type { AgentPlatform } from "@deckhand/batch-spec";
import type { KubernetesStepRunner } from "@deckhand/kubernetes-runtime";
import type { KubernetesRuntimeConfig } from "@deckhand/kubernetes-runtime/config";
import { PLATFORM_PROBE } from "./coding-agent-step.ts";
import { CONTAINER_WORK_DIRECTORY, repositoryMount } from "./container-step-runner.ts";
import type { StepPlacement } from "./step-placement.ts";
import {
  type PreparedStep,
  probedOnce,
  type StepCheckout,
  type StepExit,
  type StepRunner,
} from "./step-runner.ts";

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

/** Where the checkout appears in a step's pod: its path here, on the work volume, and `/work`. */
function podCheckout(checkout: StepCheckout): { source: string; target: string } {
  return { source: checkout.directory, target: CONTAINER_WORK_DIRECTORY };
}

export class KubernetesJobStepRunner implements StepRunner {
  readonly #cluster: KubernetesStepRunner;
  readonly #shells: Map<string, Promise<string>>;
  readonly #jobId: string | undefined;
  /** Per image, the platform its pods report, probed once per workspace run. */
  readonly #platforms = new Map<string, Promise<AgentPlatform>>();

  /**
   * `shells`: which shell each image's scripts get, shared across the runs of one process so an
   * image is probed once. `jobId`: the batch job the steps belong to, noted on their Jobs.
   */
  constructor(
    cluster: KubernetesStepRunner,
    shells: Map<string, Promise<string>>,
    jobId: string | undefined,
  ) {
    this.#cluster = cluster;
    this.#shells = shells;
    this.#jobId = jobId;
  }

  /** The platform an image reports (`uname -m`, libc), probed with a Job as for containers. */
  platform(
    placement: StepPlacement,
    checkout: StepCheckout,
    signal: AbortSignal,
  ): Promise<AgentPlatform> {
    // The cluster pulls the image: it is known by the reference the step gives.
    const image = placement.image!;
    let probed = this.#platforms.get(image);
    if (probed === undefined) {
      probed = this.#probePlatform(image, checkout, signal);
      this.#platforms.set(image, probed);
    }
    return probed;
  }

  async #probePlatform(
    image: string,
    checkout: StepCheckout,
    signal: AbortSignal,
  ): Promise<AgentPlatform> {
    let output = "";
    try {
      const where = podCheckout(checkout);
      const probe = await this.#cluster.run({
        image,
        script: PLATFORM_PROBE,
        checkout: where,
        workdir: where.target,
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

  /**
   * The shell a `run` script gets in an image, as for containers: `/bin/bash` when the image has
   * one, else `/bin/sh` — found out with a one-line Job, once per image and process. The rendered
   * agent script is POSIX sh.
   */
  async shell(step: Omit<PreparedStep, "shell">): Promise<string> {
    if (step.kind === "codingAgent") return "/bin/sh";
    const image = step.placement.image!;
    const where = podCheckout(step.checkout);
    return probedOnce(this.#shells, `kubernetes\0${image}`, step.signal, () =>
      this.#cluster
        .run({
          image,
          script: "exit 0",
          shell: "/bin/bash",
          checkout: where,
          workdir: where.target,
          signal: step.signal,
        })
        .then(
          (probe) => (probe.exitCode === 0 ? "/bin/bash" : "/bin/sh"),
          // The image cannot start at all; the step's own run reports why.
          () => "/bin/sh",
        ),
    );
  }

  /** Runs the step as a Job; its exit code is null when it was cancelled. */
  async run(step: PreparedStep): Promise<StepExit> {
    const repository = await repositoryMount(step.checkout.directory, step.signal);
    const result = await this.#cluster.run({
      image: step.placement.image!,
      script: step.script,
      shell: step.shell,
      checkout: podCheckout(step.checkout),
      workdir: posix.join(CONTAINER_WORK_DIRECTORY, step.workspacePath),
      mounts: [
        ...[...step.files, ...step.mounts].map((mount) => ({ ...mount, readOnly: true })),
        // The repository's git directory: given to the pod when it is on the work volume.
        ...repository.map((mount) => ({ ...mount, readOnly: true, optional: true })),
      ],
      env: step.env,
      labels: {
        "deckhand.dev/step-index": String(step.stepIndex),
        // A `codingAgent` step's pod is labelled so a NetworkPolicy can let it reach the proxy.
        [KUBERNETES_NETWORK_LABEL]: step.kind === "run" ? "none" : "model-proxy",
      },
      annotations: this.#jobId === undefined ? {} : { "deckhand.dev/job-id": this.#jobId },
      signal: step.signal,
      onOutput: (stream, data) => step.output(stream, data),
    });
    return { exitCode: result.exitCode };
  }
}
