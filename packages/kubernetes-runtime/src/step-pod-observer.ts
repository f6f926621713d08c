// Follows the pod of one step Job until it ends, the run is cancelled, or it is found unable to
// run: through a pod watch, streaming the container's log as soon as it has started.
import type { BatchV1Api, CoreV1Api, Log, V1Pod, Watch } from "@kubernetes/client-node";
import { KubernetesRuntimeError } from "./kubernetes-runtime-error.ts";
import { isNotFound } from "./kubernetes-status.ts";
import { describePod, fatalWaiting, stepContainerState } from "./pod-state.ts";
import { type PodEvent, PodWatch } from "./pod-watch.ts";
import { STEP_CONTAINER } from "./step-job.ts";
import { LogFollower } from "./step-output.ts";

/** The label the Job controller puts on its pods, naming the Job by uid. */
const CONTROLLER_UID_LABEL = "batch.kubernetes.io/controller-uid";

/** What ends the wait for a step's pod. */
export type PodEnding =
  | { kind: "terminal"; pod: V1Pod }
  | { kind: "aborted" }
  | { kind: "failed"; error: KubernetesRuntimeError };

export interface StepPodObserverOptions {
  clients: { batch: BatchV1Api; core: CoreV1Api; watch: Watch; log: Log };
  namespace: string;
  jobName: string;
  jobUid: string;
  /** A pod not running after this long (or never created) fails the step with why. */
  pendingTimeoutMs: number;
  onStdout: (data: Buffer) => void;
}

/** One step's pod, watched from its Job's creation to its end (or deletion). */
export class StepPodObserver {
  readonly #options: StepPodObserverOptions;
  readonly #watch: PodWatch;
  #podName: string | null = null;
  #latest: V1Pod | null = null;
  #follower: LogFollower | null = null;
  #settle: ((ending: PodEnding) => void) | null = null;
  #ending: PodEnding | null = null;
  #pending: NodeJS.Timeout | null = null;
  #gone = false;
  #goneWaiters: (() => void)[] = [];

  constructor(options: StepPodObserverOptions) {
    this.#options = options;
    this.#watch = new PodWatch({
      core: options.clients.core,
      watch: options.clients.watch,
      namespace: options.namespace,
      labelSelector: `${CONTROLLER_UID_LABEL}=${options.jobUid}`,
      onEvent: (event) => this.#onEvent(event),
    });
  }

  get podName(): string | null {
    return this.#podName;
  }

  /** Starts watching and resolves with how the pod ended; the watch goes on until `stop`. */
  wait(signal: AbortSignal | undefined): Promise<PodEnding> {
    const ended = new Promise<PodEnding>((resolve) => {
      this.#settle = resolve;
    });
    this.#pending = setTimeout(
      () => this.#end({ kind: "failed", error: this.#stuck() }),
      this.#options.pendingTimeoutMs,
    );
    const onAbort = () => this.#end({ kind: "aborted" });
    signal?.addEventListener("abort", onAbort, { once: true });
    if (signal?.aborted) onAbort();
    else this.#watch.start();
    return ended.finally(() => signal?.removeEventListener("abort", onAbort));
  }

  /** After the pod ended: lets the log stream finish (at most `timeoutMs`), then reads the rest. */
  async drainLog(timeoutMs: number): Promise<void> {
    const follower = this.#follower ?? this.#newFollower();
    if (follower === null) return;
    await follower.ended(timeoutMs);
    await follower.complete().catch(() => {});
  }

  /** Waits until the pod is gone (or there never was one), at most `timeoutMs`. */
  async podGone(timeoutMs: number): Promise<void> {
    this.#follower?.stop();
    if (this.#podName === null || this.#gone) return;
    // Started only now if the cancel came before the watch did.
    this.#watch.start();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      new Promise<void>((resolve) => this.#goneWaiters.push(resolve)),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, timeoutMs);
      }),
    ]);
    clearTimeout(timer);
  }

  stop(): void {
    if (this.#pending !== null) clearTimeout(this.#pending);
    this.#watch.stop();
    this.#follower?.stop();
  }

  #end(ending: PodEnding): void {
    if (this.#ending !== null) return;
    this.#ending = ending;
    if (this.#pending !== null) clearTimeout(this.#pending);
    this.#settle?.(ending);
  }

  #onEvent(event: PodEvent): void {
    const pod = event.pod;
    if (event.type === "deleted") {
      this.#gone = true;
      for (const resolve of this.#goneWaiters.splice(0)) resolve();
      if (this.#ending === null) {
        void this.#deletedEarly(pod).then((error) => this.#end({ kind: "failed", error }));
      }
      return;
    }
    this.#latest = pod;
    this.#podName = pod.metadata?.name ?? this.#podName;
    if (this.#ending !== null) return;
    const fatal = fatalWaiting(pod);
    if (fatal !== null) {
      const error = new KubernetesRuntimeError(
        "pod_failed",
        `the pod ${this.#podName} of Job ${this.#options.jobName} cannot start the step: ${fatal}`,
      );
      this.#end({ kind: "failed", error });
      return;
    }
    const state = stepContainerState(pod);
    if (state.running !== undefined || state.terminated !== undefined) {
      if (this.#pending !== null) clearTimeout(this.#pending);
      this.#pending = null;
      const follower = this.#follower ?? this.#newFollower();
      // A refused start (the status raced the kubelet) is tried again at the next event; the
      // whole log is read back at the end in any case.
      if (follower !== null && !follower.started) follower.start().catch(() => {});
    }
    const phase = pod.status?.phase;
    if (phase === "Succeeded" || phase === "Failed") this.#end({ kind: "terminal", pod });
  }

  #newFollower(): LogFollower | null {
    if (this.#podName === null) return null;
    const { clients, namespace } = this.#options;
    this.#follower = new LogFollower(
      clients.log,
      clients.core,
      { namespace, pod: this.#podName, container: STEP_CONTAINER },
      this.#options.onStdout,
    );
    return this.#follower;
  }

  /** Why a pod that never ran is given up: its waiting reason, or why it is not scheduled. */
  #stuck(): KubernetesRuntimeError {
    const { jobName, namespace, pendingTimeoutMs } = this.#options;
    const seconds = Math.round(pendingTimeoutMs / 1000);
    if (this.#latest === null) {
      return new KubernetesRuntimeError(
        "pod_failed",
        `Job ${jobName} created no pod within ${seconds} s (a ResourceQuota or an admission policy may refuse it); see \`kubectl describe job ${jobName} -n ${namespace}\``,
      );
    }
    return new KubernetesRuntimeError(
      "pod_failed",
      `the pod ${this.#podName} of Job ${jobName} was still pending after ${seconds} s: ${describePod(this.#latest)}; raise kubernetes.pendingTimeoutSeconds if the cluster is only slow`,
    );
  }

  /** Why the pod disappeared before it ended: the Job's failure condition, when it has one. */
  async #deletedEarly(pod: V1Pod): Promise<KubernetesRuntimeError> {
    const { clients, jobName, namespace } = this.#options;
    let why = "";
    try {
      const job = await clients.batch.readNamespacedJob({ name: jobName, namespace });
      const failed = job.status?.conditions?.find(
        (condition) => condition.type === "Failed" && condition.status === "True",
      );
      if (failed !== undefined) why = `: ${failed.reason ?? "Failed"}: ${failed.message ?? ""}`;
    } catch (error) {
      if (isNotFound(error)) why = ": its Job was deleted by someone else";
    }
    return new KubernetesRuntimeError(
      "pod_failed",
      `the pod ${pod.metadata?.name ?? ""} of Job ${jobName} was deleted before the step finished${why}`,
    );
  }
}
