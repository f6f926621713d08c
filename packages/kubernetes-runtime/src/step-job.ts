// The Job (and the Secret holding its environment) one step runs as. Pure: what the API server
// is sent, so the safety settings (no API rights, no token, no privilege) are checked by reading
// the manifest, not by trusting a cluster's defaults.
import type { V1Job, V1Secret, V1VolumeMount } from "@kubernetes/client-node";
import type { KubernetesRuntimeSettings } from "./kubernetes-config.ts";

/** The step's container in its pod; the name its logs are read by. */
export const STEP_CONTAINER = "step";
/** The pod volume of the executor's work volume claim. */
export const WORK_VOLUME = "work";
/**
 * Where the step's control directory (its stderr file, staged files) appears in the pod. Not a
 * path a step would use for itself.
 */
export const CONTROL_DIRECTORY = "/deckhand-step";
/** The step's stderr, in the control directory: the log stream carries stdout alone. */
export const STDERR_FILE = "stderr";

/** Labels every step Job and pod carries: what a NetworkPolicy or a clean-up selects. */
export const MANAGED_BY_LABEL = "app.kubernetes.io/managed-by";
export const COMPONENT_LABEL = "app.kubernetes.io/component";
export const STEP_COMPONENT = "batch-step";

/**
 * Runs the step's shell with its script, and its stderr into the control directory: the
 * Kubernetes log interleaves a container's stdout and stderr with no way to tell them apart,
 * and steps' outputs are read from stdout alone. `exec` keeps the shell's exit as the pod's.
 */
const STDERR_WRAPPER = 'exec "$1" -c "$3" 2>"$2"';

export interface StepJobInput {
  /** The Job's name; also its Secret's. A DNS label of at most 63 characters. */
  name: string;
  image: string;
  /** The shell running `script` in the image (`/bin/sh`, `/bin/bash`). */
  shell: string;
  script: string;
  /** The working directory in the pod (the workspace under `/work`). */
  workdir: string;
  /** Mounts of the work volume, by sub-path, the control directory's included. */
  volumeMounts: V1VolumeMount[];
  /** Whether the step's environment is in the Secret named like the Job. */
  hasEnvironment: boolean;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  /** Kubernetes stops the pod after this many seconds; none when null. */
  activeDeadlineSeconds: number | null;
}

/** The labels of a step's Job and pod: the configured ones under Deckhand's own. */
export function stepLabels(
  settings: KubernetesRuntimeSettings,
  extra: Record<string, string>,
): Record<string, string> {
  return {
    ...settings.labels,
    ...extra,
    [MANAGED_BY_LABEL]: "deckhand",
    [COMPONENT_LABEL]: STEP_COMPONENT,
  };
}

/** The Secret holding a step's environment, so values are not in the Job's spec for all to read. */
export function stepSecretManifest(
  name: string,
  env: Readonly<Record<string, string>>,
  labels: Record<string, string>,
): V1Secret {
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name, labels },
    type: "Opaque",
    stringData: { ...env },
  };
}

/**
 * The Job of one step: one pod, never retried (a retry would run the step again on a checkout it
 * already changed), as the step service account with no token mounted, no privilege escalation,
 * no capabilities, no service links; egress is whatever the namespace's NetworkPolicy allows.
 */
export function stepJobManifest(settings: KubernetesRuntimeSettings, input: StepJobInput): V1Job {
  const resources = {
    ...(Object.keys(settings.resources.requests).length > 0
      ? { requests: settings.resources.requests }
      : {}),
    ...(Object.keys(settings.resources.limits).length > 0
      ? { limits: settings.resources.limits }
      : {}),
  };
  return {
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: { name: input.name, labels: input.labels, annotations: input.annotations },
    spec: {
      backoffLimit: 0,
      ttlSecondsAfterFinished: settings.ttlSecondsAfterFinished,
      ...(input.activeDeadlineSeconds !== null
        ? { activeDeadlineSeconds: input.activeDeadlineSeconds }
        : {}),
      template: {
        metadata: { labels: input.labels, annotations: input.annotations },
        spec: {
          restartPolicy: "Never",
          terminationGracePeriodSeconds: settings.terminationGracePeriodSeconds,
          serviceAccountName: settings.serviceAccountName,
          automountServiceAccountToken: false,
          enableServiceLinks: false,
          ...(Object.keys(settings.nodeSelector).length > 0
            ? { nodeSelector: settings.nodeSelector }
            : {}),
          ...(settings.tolerations.length > 0 ? { tolerations: settings.tolerations } : {}),
          ...(settings.nodeName !== null ? { affinity: sameNode(settings.nodeName) } : {}),
          ...(settings.imagePullSecrets.length > 0
            ? { imagePullSecrets: settings.imagePullSecrets.map((name) => ({ name })) }
            : {}),
          securityContext: {
            runAsUser: settings.runAsUser,
            runAsGroup: settings.runAsGroup,
            // What the "restricted" Pod Security Standard asks for, whenever it can hold.
            ...(settings.runAsUser !== 0 ? { runAsNonRoot: true } : {}),
            seccompProfile: { type: "RuntimeDefault" },
          },
          containers: [
            {
              name: STEP_CONTAINER,
              image: input.image,
              imagePullPolicy: settings.imagePullPolicy,
              command: [
                "/bin/sh",
                "-c",
                STDERR_WRAPPER,
                "deckhand-step",
                input.shell,
                `${CONTROL_DIRECTORY}/${STDERR_FILE}`,
                input.script,
              ],
              workingDir: input.workdir,
              ...(input.hasEnvironment ? { envFrom: [{ secretRef: { name: input.name } }] } : {}),
              ...(Object.keys(resources).length > 0 ? { resources } : {}),
              securityContext: {
                allowPrivilegeEscalation: false,
                privileged: false,
                capabilities: { drop: ["ALL"] },
              },
              volumeMounts: input.volumeMounts,
            },
          ],
          volumes: [
            {
              name: WORK_VOLUME,
              persistentVolumeClaim: { claimName: settings.workVolume.claimName },
            },
          ],
        },
      },
    },
  };
}

/** Required affinity to one node by name, as the DaemonSet controller pins its pods. */
function sameNode(nodeName: string) {
  return {
    nodeAffinity: {
      requiredDuringSchedulingIgnoredDuringExecution: {
        nodeSelectorTerms: [
          { matchFields: [{ key: "metadata.name", operator: "In", values: [nodeName] }] },
        ],
      },
    },
  };
}
