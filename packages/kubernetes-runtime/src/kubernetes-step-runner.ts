// Runs one batch step as a Kubernetes Job and waits for it: the step's environment in a Secret,
// the Job with its pod on the shared work volume, the pod followed through a watch, stdout
// streamed from its log and stderr from the volume, and the Job (with its pod) and the Secret
// deleted at the end however it ends — a cancel included.
import { randomBytes } from "node:crypto";
import { isAbsolute } from "node:path";
import {
  BatchV1Api,
  CoreV1Api,
  type KubeConfig,
  Log,
  type V1Job,
  Watch,
} from "@kubernetes/client-node";
import type { KubernetesRuntimeSettings } from "./kubernetes-config.ts";
import { KubernetesRuntimeError } from "./kubernetes-runtime-error.ts";
import { apiFailure, isNotFound } from "./kubernetes-status.ts";
import { podOutcome } from "./pod-state.ts";
import { stepJobManifest, stepLabels, stepSecretManifest } from "./step-job.ts";
import { FileTail } from "./step-output.ts";
import { type PodEnding, StepPodObserver } from "./step-pod-observer.ts";
import { type KubernetesStepMount, prepareVolume } from "./work-volume.ts";

export type { KubernetesStepMount } from "./work-volume.ts";

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** How long the log stream may take to end after the container did, before it is read back. */
const LOG_DRAIN_MS = 5_000;
/** How long a cancel waits for the step's pod to be gone after its Job was deleted. */
const POD_GONE_TIMEOUT_MS = 60_000;

/** A prepared step: what runs, where it sees the checkout, and who hears its output. */
export interface KubernetesStep {
  image: string;
  script: string;
  /** The shell running `script` in the image; default `/bin/sh`. */
  shell?: string;
  /** The checkout: its path here (on the work volume) and where the pod sees it. */
  checkout: { source: string; target: string };
  /** The step's working directory in the pod (the workspace, under the checkout's target). */
  workdir: string;
  /** More paths the pod sees: on the volume by sub-path, others copied to it first. */
  mounts?: readonly KubernetesStepMount[];
  env?: Readonly<Record<string, string>>;
  /** Extra labels of the Job and pod (a NetworkPolicy may select agent steps by one). */
  labels?: Record<string, string>;
  /** Free-form notes on the Job and pod (the batch job it belongs to). */
  annotations?: Record<string, string>;
  /** Kubernetes stops the pod after this long even if this process is gone. */
  timeoutMs?: number;
  signal?: AbortSignal;
  onOutput?: (stream: "stdout" | "stderr", data: Buffer) => void;
}

export interface KubernetesStepResult {
  /** "exited": the step's script ended by itself; "aborted": the signal fired and it was stopped. */
  ending: "exited" | "aborted";
  /** The script's exit code; null when aborted. */
  exitCode: number | null;
  jobName: string;
  podName: string | null;
  durationMs: number;
}

/** Runs steps as Jobs in one namespace with one cluster connection. */
export class KubernetesStepRunner {
  readonly settings: KubernetesRuntimeSettings;
  readonly #batch: BatchV1Api;
  readonly #core: CoreV1Api;
  readonly #watch: Watch;
  readonly #log: Log;

  constructor(settings: KubernetesRuntimeSettings, kubeConfig: KubeConfig) {
    this.settings = settings;
    this.#batch = kubeConfig.makeApiClient(BatchV1Api);
    this.#core = kubeConfig.makeApiClient(CoreV1Api);
    this.#watch = new Watch(kubeConfig);
    this.#log = new Log(kubeConfig);
  }

  /**
   * Runs the step and returns its exit code. Throws a KubernetesRuntimeError when the pod ended
   * without the script's own exit (out of memory, evicted, never scheduled, image not pulled),
   * naming the reason Kubernetes gave.
   */
  async run(step: KubernetesStep): Promise<KubernetesStepResult> {
    checkStep(step);
    const started = performance.now();
    const name = `deckhand-step-${randomBytes(5).toString("hex")}`;
    const { namespace } = this.settings;
    const volume = await prepareVolume(
      this.settings.workVolume.mountPath,
      name,
      { ...step.checkout },
      step.mounts ?? [],
    );
    const env = step.env ?? {};
    const labels = stepLabels(this.settings, step.labels ?? {});
    let secretCreated = false;
    let job: V1Job | null = null;
    let podName: string | null = null;
    const result = (ending: "exited" | "aborted", exitCode: number | null) => ({
      ending,
      exitCode,
      jobName: name,
      podName,
      durationMs: Math.round(performance.now() - started),
    });
    try {
      if (step.signal?.aborted) return result("aborted", null);
      const hasEnvironment = Object.keys(env).length > 0;
      if (hasEnvironment) {
        await this.#core
          .createNamespacedSecret({ namespace, body: stepSecretManifest(name, env, labels) })
          .catch((error: unknown) => {
            throw apiFailure(`creating the Secret of Job ${name} in namespace ${namespace}`, error);
          });
        secretCreated = true;
      }
      const manifest = stepJobManifest(this.settings, {
        name,
        image: step.image,
        shell: step.shell ?? "/bin/sh",
        script: step.script,
        workdir: step.workdir,
        volumeMounts: volume.volumeMounts,
        hasEnvironment,
        labels,
        annotations: step.annotations ?? {},
        activeDeadlineSeconds:
          step.timeoutMs === undefined ? null : Math.max(1, Math.ceil(step.timeoutMs / 1000)),
      });
      job = await this.#batch
        .createNamespacedJob({ namespace, body: manifest })
        .catch((error: unknown) => {
          throw apiFailure(`creating Job ${name} in namespace ${namespace}`, error);
        });
      const stderr = new FileTail(volume.stderrPath, (data) => step.onOutput?.("stderr", data));
      stderr.start();
      const observer = new StepPodObserver({
        clients: { batch: this.#batch, core: this.#core, watch: this.#watch, log: this.#log },
        namespace,
        jobName: name,
        jobUid: job.metadata?.uid ?? "",
        pendingTimeoutMs: this.settings.pendingTimeoutMs,
        onStdout: (data) => step.onOutput?.("stdout", data),
      });
      let ending: PodEnding;
      try {
        ending = await observer.wait(step.signal);
        podName = observer.podName;
        if (ending.kind === "aborted") {
          await this.#deleteJob(name);
          job = null;
          await observer.podGone(POD_GONE_TIMEOUT_MS);
        } else if (ending.kind === "terminal") {
          await observer.drainLog(LOG_DRAIN_MS);
        }
      } finally {
        observer.stop();
        await stderr.finish();
      }
      if (ending.kind === "aborted") return result("aborted", null);
      if (ending.kind === "failed") throw ending.error;
      return result("exited", podOutcome(ending.pod, name));
    } finally {
      if (job !== null) await this.#deleteJob(name).catch(() => {});
      if (secretCreated) {
        await this.#core.deleteNamespacedSecret({ name, namespace }).catch(() => {});
      }
      await volume.remove();
    }
  }

  /** Deletes the Job and, as the policy says, its pod; a Job already gone is no error. */
  async #deleteJob(name: string): Promise<void> {
    try {
      await this.#batch.deleteNamespacedJob({
        name,
        namespace: this.settings.namespace,
        propagationPolicy: this.settings.propagationPolicy,
      });
    } catch (error) {
      if (isNotFound(error)) return;
      throw apiFailure(`deleting Job ${name} in namespace ${this.settings.namespace}`, error);
    }
  }
}

function checkStep(step: KubernetesStep): void {
  const invalid = (message: string): never => {
    throw new KubernetesRuntimeError("invalid_step", message);
  };
  if (step.image.trim() === "" || /\s/.test(step.image)) {
    invalid(`image ${JSON.stringify(step.image)} is not an image reference`);
  }
  for (const [what, path] of [
    ["workdir", step.workdir],
    ["checkout target", step.checkout.target],
    ["shell", step.shell ?? "/bin/sh"],
  ] as const) {
    if (!isAbsolute(path)) invalid(`${what} ${JSON.stringify(path)} must be an absolute path`);
  }
  for (const [name, value] of Object.entries(step.env ?? {})) {
    if (!ENV_NAME.test(name)) {
      invalid(`environment variable name ${JSON.stringify(name)} is not a valid name`);
    }
    if (value.includes("\0")) invalid(`environment variable ${name} contains a NUL character`);
  }
}
