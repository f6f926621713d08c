// What a step pod's status says: whether the step's container can still start, how it ended,
// and in words an operator recognises (the reasons `kubectl describe pod` shows).
import type { V1ContainerState, V1Pod } from "@kubernetes/client-node";
import { KubernetesRuntimeError } from "./kubernetes-runtime-error.ts";
import { STEP_CONTAINER } from "./step-job.ts";

/**
 * Waiting reasons that no amount of waiting fixes: the image name is malformed, the image may
 * not be pulled and is absent, or the container's configuration (its env Secret) is broken.
 * Pull errors (`ErrImagePull`, `ImagePullBackOff`) are retried by the kubelet and may clear up;
 * they fail the step only when the pending timeout runs out.
 */
const FATAL_WAITING = new Set([
  "InvalidImageName",
  "ErrImageNeverPull",
  "CreateContainerConfigError",
  "CreateContainerError",
]);

/** The step container's current state; empty before the kubelet reports it. */
export function stepContainerState(pod: V1Pod): V1ContainerState {
  return (
    pod.status?.containerStatuses?.find((status) => status.name === STEP_CONTAINER)?.state ?? {}
  );
}

/** `reason: message` of a waiting step container that can never start, else null. */
export function fatalWaiting(pod: V1Pod): string | null {
  const waiting = stepContainerState(pod).waiting;
  if (waiting?.reason === undefined || !FATAL_WAITING.has(waiting.reason)) return null;
  return `${waiting.reason}${waiting.message ? `: ${waiting.message}` : ""}`;
}

/** Why a pod is where it is, in one line: its container's waiting reason or its scheduling. */
export function describePod(pod: V1Pod): string {
  const waiting = stepContainerState(pod).waiting;
  if (waiting?.reason !== undefined) {
    return `${waiting.reason}${waiting.message ? `: ${waiting.message}` : ""}`;
  }
  const unscheduled = pod.status?.conditions?.find(
    (condition) => condition.type === "PodScheduled" && condition.status === "False",
  );
  if (unscheduled !== undefined) {
    return `${unscheduled.reason ?? "Unschedulable"}: ${unscheduled.message ?? "not scheduled"}`;
  }
  return `phase ${pod.status?.phase ?? "Pending"}${pod.status?.reason ? ` (${pod.status.reason}: ${pod.status.message ?? ""})` : ""}`;
}

/**
 * The exit code of a pod that ended. A script that exits non-zero is the step's own failure and
 * returned as its code; a container killed for memory, or a pod that ended without the step's
 * exit (evicted, past its deadline), throws with the reason Kubernetes gave.
 */
export function podOutcome(pod: V1Pod, jobName: string): number {
  const terminated = stepContainerState(pod).terminated;
  const podName = pod.metadata?.name ?? jobName;
  if (terminated === undefined) {
    throw new KubernetesRuntimeError(
      "pod_failed",
      `pod ${podName} of Job ${jobName} ended (${pod.status?.phase ?? "unknown"}) without the step finishing: ${pod.status?.reason ?? "no reason given"}${pod.status?.message ? `: ${pod.status.message}` : ""}`,
    );
  }
  if (terminated.reason === "OOMKilled") {
    throw new KubernetesRuntimeError(
      "pod_failed",
      `pod ${podName} of Job ${jobName} was killed for using more memory than its limit (OOMKilled, exit ${terminated.exitCode}); raise kubernetes.resources.limits.memory`,
    );
  }
  if (terminated.reason === "ContainerCannotRun" || terminated.reason === "StartError") {
    throw new KubernetesRuntimeError(
      "pod_failed",
      `pod ${podName} of Job ${jobName} could not run the step: ${terminated.reason}${terminated.message ? `: ${terminated.message}` : ""}`,
    );
  }
  return terminated.exitCode;
}
