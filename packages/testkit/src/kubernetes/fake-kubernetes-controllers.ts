// What happens in the fake cluster between requests: the Job controller (a pod per Job, status
// and conditions as the pod ends, the active deadline, retries up to backoffLimit), the
// scheduler (node selector and node affinity against the one node), the garbage collector
// (Background, Foreground and Orphan deletion of a Job's pods) and the TTL controller.
import { randomBytes, randomUUID } from "node:crypto";
import { FakeKubelet, type FakeKubeletContainerCli, readiness } from "./fake-kubelet.ts";
import { type KubeObject, kubeTime } from "./fake-kubernetes-objects.ts";
import type { FakeKubernetesStore } from "./fake-kubernetes-store.ts";

export type Propagation = "Background" | "Foreground" | "Orphan";

export interface FakeNode {
  name: string;
  labels: Record<string, string>;
}

export class FakeControllers {
  readonly #store: FakeKubernetesStore;
  readonly kubelet: FakeKubelet;
  readonly #node: FakeNode;
  readonly #timers = new Set<NodeJS.Timeout>();
  #closed = false;

  constructor(
    store: FakeKubernetesStore,
    node: FakeNode,
    cli: FakeKubeletContainerCli,
    claims: Readonly<Record<string, string>>,
  ) {
    this.#store = store;
    this.#node = node;
    this.kubelet = new FakeKubelet({
      cli,
      claims,
      secret: (namespace, name) => store.get("secrets", namespace, name),
      update: (namespace, name, change) => this.#updatePod(namespace, name, change),
    });
  }

  #later(action: () => void, delayMs = 0): void {
    if (this.#closed) return;
    const timer = setTimeout(() => {
      this.#timers.delete(timer);
      if (!this.#closed) action();
    }, delayMs);
    timer.unref();
    this.#timers.add(timer);
  }

  /** A Job was created: its pod follows, and its deadline starts. */
  jobCreated(job: KubeObject): void {
    const namespace = job.metadata.namespace!;
    const name = job.metadata.name!;
    this.#later(() => this.#syncJob(namespace, name));
    const deadline = job.spec.activeDeadlineSeconds;
    if (typeof deadline === "number") {
      this.#later(() => this.#deadlineExceeded(namespace, name), deadline * 1000);
    }
  }

  #ownedPods(job: KubeObject): KubeObject[] {
    return this.#store
      .list("pods", job.metadata.namespace!)
      .filter((pod) =>
        pod.metadata.ownerReferences?.some((owner) => owner.uid === job.metadata.uid),
      );
  }

  /** Creates the Job's pod when it has none running and may still try (backoffLimit). */
  #syncJob(namespace: string, name: string): void {
    const job = this.#store.get("jobs", namespace, name);
    if (job === undefined || job.metadata.deletionTimestamp !== undefined) return;
    if (finished(job)) return;
    const pods = this.#ownedPods(job);
    const active = pods.filter((pod) => !["Succeeded", "Failed"].includes(pod.status?.phase));
    if (active.length > 0) return;
    const template = job.spec.template;
    const pod: KubeObject = {
      metadata: {
        name: `${name}-${randomBytes(3).toString("hex").slice(0, 5)}`,
        generateName: `${name}-`,
        namespace,
        uid: randomUUID(),
        creationTimestamp: kubeTime(),
        labels: { ...(template.metadata?.labels ?? {}) },
        annotations: { ...(template.metadata?.annotations ?? {}) },
        ownerReferences: [
          {
            apiVersion: "batch/v1",
            kind: "Job",
            name,
            uid: job.metadata.uid!,
            controller: true,
            blockOwnerDeletion: true,
          },
        ],
        finalizers: ["batch.kubernetes.io/job-tracking"],
      },
      spec: structuredClone(template.spec),
      status: { phase: "Pending", qosClass: "BestEffort" },
    };
    this.#store.add("pods", pod);
    job.status = { ...job.status, active: 1, ready: 0, terminating: 0 };
    job.status.startTime ??= kubeTime();
    this.#store.update("jobs", job);
    this.#later(() => this.#schedule(namespace, pod.metadata.name!));
  }

  /** Binds the pod to the node when it fits there, else marks it unschedulable, and starts it. */
  #schedule(namespace: string, name: string): void {
    const pod = this.#store.get("pods", namespace, name);
    if (pod === undefined || pod.metadata.deletionTimestamp !== undefined) return;
    const misfit = this.#misfit(pod);
    if (misfit !== null) {
      pod.status.conditions = [
        {
          type: "PodScheduled",
          status: "False",
          lastProbeTime: null,
          lastTransitionTime: kubeTime(),
          reason: "Unschedulable",
          message: `0/1 nodes are available: 1 node(s) ${misfit}. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.`,
        },
      ];
      this.#store.update("pods", pod);
      return;
    }
    pod.spec.nodeName = this.#node.name;
    pod.status = {
      phase: "Pending",
      conditions: readiness(false, "ContainersNotReady"),
      hostIP: "127.0.0.1",
      startTime: kubeTime(),
      qosClass: pod.status.qosClass,
      containerStatuses: pod.spec.containers.map((container: { name: string; image: string }) => ({
        name: container.name,
        image: container.image,
        imageID: "",
        ready: false,
        restartCount: 0,
        started: false,
        state: { waiting: { reason: "ContainerCreating" } },
      })),
    };
    const stored = this.#store.update("pods", pod);
    this.kubelet.start(stored);
  }

  /** Why the node does not fit the pod, in the scheduler's words; null when it fits. */
  #misfit(pod: KubeObject): string | null {
    const labels = this.#node.labels;
    for (const [key, value] of Object.entries(pod.spec.nodeSelector ?? {})) {
      if (labels[key] !== value) return "didn't match Pod's node affinity/selector";
    }
    const terms =
      pod.spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution
        ?.nodeSelectorTerms ?? [];
    const fields: Record<string, string> = { "metadata.name": this.#node.name };
    const satisfied = (
      requirement: { key: string; operator: string; values?: string[] },
      source: Record<string, string>,
    ) => {
      const value = source[requirement.key];
      if (requirement.operator === "In")
        return value !== undefined && (requirement.values ?? []).includes(value);
      if (requirement.operator === "NotIn")
        return !(requirement.values ?? []).includes(value ?? "");
      if (requirement.operator === "Exists") return value !== undefined;
      if (requirement.operator === "DoesNotExist") return value === undefined;
      return false;
    };
    if (
      terms.length > 0 &&
      !terms.some(
        (term: { matchFields?: []; matchExpressions?: [] }) =>
          (term.matchFields ?? []).every((requirement) => satisfied(requirement, fields)) &&
          (term.matchExpressions ?? []).every((requirement) => satisfied(requirement, labels)),
      )
    ) {
      return "didn't match Pod's node affinity/selector";
    }
    return null;
  }

  #updatePod(namespace: string, name: string, change: (pod: KubeObject) => void): void {
    const pod = this.#store.get("pods", namespace, name);
    if (pod === undefined) return;
    change(pod);
    const stored = this.#store.update("pods", pod);
    const phase = stored.status?.phase;
    if (phase === "Succeeded" || phase === "Failed") this.#later(() => this.#podEnded(stored));
  }

  /** The Job controller's accounting of an ended pod: counts, conditions, a retry. */
  #podEnded(pod: KubeObject): void {
    const owner = pod.metadata.ownerReferences?.find((reference) => reference.kind === "Job");
    if (owner === undefined) return;
    const namespace = pod.metadata.namespace!;
    const job = this.#store.get("jobs", namespace, owner.name);
    if (job === undefined || job.metadata.uid !== owner.uid || finished(job)) return;
    const now = kubeTime();
    const condition = (type: string, reason?: string, message?: string) => ({
      type,
      status: "True",
      lastProbeTime: now,
      lastTransitionTime: now,
      ...(reason ? { reason } : {}),
      ...(message ? { message } : {}),
    });
    if (pod.status.phase === "Succeeded") {
      job.status = {
        ...job.status,
        active: 0,
        ready: 0,
        succeeded: (job.status.succeeded ?? 0) + 1,
        completionTime: now,
        conditions: [
          condition(
            "SuccessCriteriaMet",
            "CompletionsReached",
            "Reached expected number of succeeded pods",
          ),
          condition("Complete", "CompletionsReached", "Reached expected number of succeeded pods"),
        ],
      };
      this.#store.update("jobs", job);
    } else {
      const failed = (job.status.failed ?? 0) + 1;
      job.status = { ...job.status, active: 0, ready: 0, failed };
      if (failed > (job.spec.backoffLimit ?? 6)) {
        const message = "Job has reached the specified backoff limit";
        job.status.conditions = [
          condition("FailureTarget", "BackoffLimitExceeded", message),
          condition("Failed", "BackoffLimitExceeded", message),
        ];
        this.#store.update("jobs", job);
      } else {
        this.#store.update("jobs", job);
        this.#later(() => this.#syncJob(namespace, job.metadata.name!));
      }
    }
    this.#dropFinalizer(pod);
    this.#scheduleTtl(namespace, job.metadata.name!);
  }

  #dropFinalizer(pod: KubeObject): void {
    const current = this.#store.get("pods", pod.metadata.namespace!, pod.metadata.name!);
    if (current?.metadata.finalizers?.length) {
      current.metadata.finalizers = [];
      this.#store.update("pods", current);
    }
  }

  #deadlineExceeded(namespace: string, name: string): void {
    const job = this.#store.get("jobs", namespace, name);
    if (job === undefined || finished(job)) return;
    const now = kubeTime();
    const message = "Job was active longer than specified deadline";
    job.status = {
      ...job.status,
      active: 0,
      conditions: [
        {
          type: "FailureTarget",
          status: "True",
          lastProbeTime: now,
          lastTransitionTime: now,
          reason: "DeadlineExceeded",
          message,
        },
        {
          type: "Failed",
          status: "True",
          lastProbeTime: now,
          lastTransitionTime: now,
          reason: "DeadlineExceeded",
          message,
        },
      ],
    };
    this.#store.update("jobs", job);
    for (const pod of this.#ownedPods(job))
      void this.deletePod(namespace, pod.metadata.name!, undefined);
  }

  #scheduleTtl(namespace: string, name: string): void {
    const job = this.#store.get("jobs", namespace, name);
    const ttl = job?.spec.ttlSecondsAfterFinished;
    if (job === undefined || typeof ttl !== "number" || !finished(job)) return;
    this.#later(() => {
      const current = this.#store.get("jobs", namespace, name);
      if (current !== undefined && current.metadata.uid === job.metadata.uid) {
        this.deleteJob(current, "Background");
      }
    }, ttl * 1000);
  }

  /**
   * Deletes a Job as the API server and garbage collector do: Background removes it now and its
   * pods after; Foreground marks it, removes its pods, then it; Orphan removes it and leaves its
   * pods without an owner. Returns the Job as it stands (Foreground) or null once removed.
   */
  deleteJob(job: KubeObject, propagation: Propagation): KubeObject | null {
    const namespace = job.metadata.namespace!;
    const name = job.metadata.name!;
    const pods = this.#ownedPods(job);
    if (propagation === "Foreground") {
      if (job.metadata.deletionTimestamp === undefined) {
        job.metadata.deletionTimestamp = kubeTime();
        job.metadata.deletionGracePeriodSeconds = 0;
        job.metadata.finalizers = [...(job.metadata.finalizers ?? []), "foregroundDeletion"];
      }
      const marked = this.#store.update("jobs", job);
      this.#later(async () => {
        await Promise.all(
          pods.map((pod) => this.deletePod(namespace, pod.metadata.name!, undefined)),
        );
        const current = this.#store.get("jobs", namespace, name);
        if (current?.metadata.uid === job.metadata.uid) this.#store.remove("jobs", namespace, name);
      });
      return marked;
    }
    this.#store.remove("jobs", namespace, name);
    if (propagation === "Background") {
      this.#later(() => {
        for (const pod of pods) void this.deletePod(namespace, pod.metadata.name!, undefined);
      });
    } else {
      for (const pod of pods) {
        const current = this.#store.get("pods", namespace, pod.metadata.name!);
        if (current === undefined) continue;
        current.metadata.ownerReferences = (current.metadata.ownerReferences ?? []).filter(
          (owner) => owner.uid !== job.metadata.uid,
        );
        this.#store.update("pods", current);
      }
    }
    return null;
  }

  /**
   * Graceful pod deletion: the pod is marked (deletionTimestamp), its containers stopped within
   * the grace period, then it is removed. Returns the marked pod, or undefined when there is none.
   */
  deletePod(
    namespace: string,
    name: string,
    graceSeconds: number | undefined,
  ): KubeObject | undefined {
    const pod = this.#store.get("pods", namespace, name);
    if (pod === undefined) return undefined;
    if (pod.metadata.deletionTimestamp !== undefined) return pod;
    const grace = graceSeconds ?? pod.spec.terminationGracePeriodSeconds ?? 30;
    pod.metadata.deletionTimestamp = kubeTime(new Date(Date.now() + grace * 1000));
    pod.metadata.deletionGracePeriodSeconds = grace;
    const marked = this.#store.update("pods", pod);
    void this.kubelet.kill(namespace, name, grace).then(() => {
      const current = this.#store.get("pods", namespace, name);
      if (current !== undefined && current.metadata.uid === pod.metadata.uid) {
        if (!["Succeeded", "Failed"].includes(current.status?.phase)) {
          current.status.phase = "Failed";
          this.#store.update("pods", current);
        }
        this.#store.remove("pods", namespace, name);
      }
      this.kubelet.forget(namespace, name);
    });
    return marked;
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
    await this.kubelet.close();
  }
}

function finished(job: KubeObject): boolean {
  return (job.status?.conditions ?? []).some(
    (condition: { type: string; status: string }) =>
      (condition.type === "Complete" || condition.type === "Failed") && condition.status === "True",
  );
}
