// The `kubernetes` section of config.json: where step Jobs run and what they may use. Parsed with
// zod so each problem is reported at its path (`kubernetes.resources.limits.memory: ...`), the
// way every other config.json section is.
import { isAbsolute } from "node:path";
import { z } from "zod";
import { KubernetesRuntimeError } from "./kubernetes-runtime-error.ts";

/** A DNS-1123 label, what namespaces, Job names and most object names must be. */
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
/** A DNS-1123 subdomain: service account, secret and claim names. */
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
/** A resource quantity as the API server's OpenAPI schema defines it (`500m`, `2Gi`, `1e3`). */
const QUANTITY =
  /^[+-]?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE][+-]?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$/;
/** A label or annotation key: an optional DNS subdomain prefix and a name of up to 63. */
const LABEL_KEY =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$/;

const dnsLabel = z
  .string()
  .max(63)
  .regex(DNS_LABEL, "must be a lower-case DNS label (letters, digits and -), such as deckhand");
const dnsSubdomain = z
  .string()
  .max(253)
  .regex(DNS_SUBDOMAIN, "must be a lower-case DNS name (letters, digits, - and .)");
const quantity = z
  .string()
  .regex(QUANTITY, "must be a Kubernetes quantity such as 500m, 2, 512Mi or 4Gi");

/** Resource names a step may request or be limited to. */
const ResourceListSchema = z
  .partialRecord(
    z.enum(["cpu", "memory", "ephemeral-storage"], {
      error: "must be cpu, memory or ephemeral-storage",
    }),
    quantity,
  )
  .optional();

export const KubernetesTolerationSchema = z.strictObject({
  key: z.string().regex(LABEL_KEY, "must be a label key").optional(),
  operator: z.enum(["Equal", "Exists"]).optional(),
  value: z.string().regex(LABEL_VALUE, "must be a label value").optional(),
  effect: z.enum(["NoSchedule", "PreferNoSchedule", "NoExecute"]).optional(),
  tolerationSeconds: z.int().min(0).optional(),
});

/** A toleration of a taint, as a pod spec writes it. */
export type KubernetesToleration = z.infer<typeof KubernetesTolerationSchema>;

export const KubernetesPropagationPolicySchema = z.enum(["Background", "Foreground"]);
export type KubernetesPropagationPolicy = z.infer<typeof KubernetesPropagationPolicySchema>;

/** config.json's `kubernetes`: every field but the work volume has a default. */
export const KubernetesRuntimeConfigSchema = z.strictObject({
  /** The namespace step Jobs are created in; `default` when absent. */
  namespace: dnsLabel.optional(),
  /**
   * A kubeconfig file (absolute), for an executor outside the cluster; without it the executor
   * uses its pod's service account (in-cluster configuration).
   */
  kubeconfig: z
    .string()
    .refine((path) => isAbsolute(path), "must be an absolute path")
    .optional(),
  /** The kubeconfig context to use; its current context when absent. */
  context: z.string().min(1).optional(),
  /**
   * The service account step pods run as: one bound to no Role, so a step has no API rights; its
   * token is never mounted either way. `deckhand-step` when absent.
   */
  serviceAccountName: dnsSubdomain.optional(),
  /**
   * The volume the executor keeps its data directory on, which step pods mount to see the
   * checkout: the claim's name and where the executor has it mounted.
   */
  workVolume: z.strictObject({
    claimName: dnsSubdomain,
    mountPath: z
      .string()
      .refine((path) => isAbsolute(path) && path !== "/", "must be an absolute path, not /"),
  }),
  resources: z
    .strictObject({ requests: ResourceListSchema, limits: ResourceListSchema })
    .optional(),
  imagePullPolicy: z.enum(["Always", "IfNotPresent", "Never"]).optional(),
  /** Secrets (in the namespace) holding registry credentials for step images. */
  imagePullSecrets: z.array(dnsSubdomain).optional(),
  nodeSelector: z
    .record(
      z.string().regex(LABEL_KEY, "must be a label key"),
      z.string().regex(LABEL_VALUE, "must be a label value"),
    )
    .optional(),
  tolerations: z.array(KubernetesTolerationSchema).optional(),
  /**
   * Run step pods on the executor's own node, for a ReadWriteOnce work volume: the node is read
   * from the environment variable the executor's manifest fills from `spec.nodeName`.
   */
  sameNodeAsExecutor: z.boolean().optional(),
  /** The user and group steps run as; this process's by default, so the checkout stays its. */
  runAsUser: z.int().min(0).optional(),
  runAsGroup: z.int().min(0).optional(),
  /** How a finished or cancelled step's Job takes its pod with it; Background by default. */
  propagationPolicy: KubernetesPropagationPolicySchema.optional(),
  /** A pod still pending after this long (unschedulable, image not pulled) fails the step. */
  pendingTimeoutSeconds: z.int().min(5).max(86_400).optional(),
  /**
   * How long a cancelled step's container has between TERM and KILL; 10 s by default. A step's
   * shell is its container's process 1, which ignores TERM unless the script traps it.
   */
  terminationGracePeriodSeconds: z.int().min(0).max(3_600).optional(),
  /** Kubernetes removes a finished Job after this long should the executor not (it died). */
  ttlSecondsAfterFinished: z.int().min(0).max(604_800).optional(),
  /** Extra labels for step Jobs and pods (for NetworkPolicies and quotas to select them). */
  labels: z
    .record(
      z.string().regex(LABEL_KEY, "must be a label key"),
      z.string().regex(LABEL_VALUE, "must be a label value"),
    )
    .optional(),
});
export type KubernetesRuntimeConfig = z.infer<typeof KubernetesRuntimeConfigSchema>;

/**
 * The environment variable the executor's manifest sets from the downward API (`spec.nodeName`),
 * read when `sameNodeAsExecutor` is on.
 */
export const NODE_NAME_ENV = "DECKHAND_NODE_NAME";

export const DEFAULT_STEP_SERVICE_ACCOUNT = "deckhand-step";
const DEFAULT_PENDING_TIMEOUT_SECONDS = 600;
const DEFAULT_TTL_SECONDS_AFTER_FINISHED = 600;

/** What the runtime runs with: the config with every default filled in. */
export interface KubernetesRuntimeSettings {
  namespace: string;
  kubeconfig: string | null;
  context: string | null;
  serviceAccountName: string;
  workVolume: { claimName: string; mountPath: string };
  resources: {
    requests: Record<string, string>;
    limits: Record<string, string>;
  };
  imagePullPolicy: "Always" | "IfNotPresent" | "Never";
  imagePullSecrets: string[];
  nodeSelector: Record<string, string>;
  tolerations: KubernetesToleration[];
  /** The node step pods must run on; null for any. */
  nodeName: string | null;
  runAsUser: number;
  runAsGroup: number;
  propagationPolicy: KubernetesPropagationPolicy;
  pendingTimeoutMs: number;
  terminationGracePeriodSeconds: number;
  ttlSecondsAfterFinished: number;
  labels: Record<string, string>;
}

/**
 * Fills in a parsed config's defaults. `environment` gives the node name when step pods must run
 * on the executor's node; a missing one is a config error saying how to set it.
 */
export function kubernetesRuntimeSettings(
  config: KubernetesRuntimeConfig,
  environment: Readonly<Record<string, string | undefined>> = process.env,
  where = "kubernetes",
): KubernetesRuntimeSettings {
  let nodeName: string | null = null;
  if (config.sameNodeAsExecutor === true) {
    nodeName = environment[NODE_NAME_ENV] || null;
    if (nodeName === null) {
      throw new KubernetesRuntimeError(
        "invalid_config",
        `${where}.sameNodeAsExecutor: ${NODE_NAME_ENV} is not set; give the executor's container the env entry {"name": "${NODE_NAME_ENV}", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}`,
      );
    }
  }
  return {
    namespace: config.namespace ?? "default",
    kubeconfig: config.kubeconfig ?? null,
    context: config.context ?? null,
    serviceAccountName: config.serviceAccountName ?? DEFAULT_STEP_SERVICE_ACCOUNT,
    workVolume: {
      claimName: config.workVolume.claimName,
      mountPath: config.workVolume.mountPath.replace(/\/+$/, ""),
    },
    resources: {
      requests: { ...(config.resources?.requests ?? {}) },
      limits: { ...(config.resources?.limits ?? {}) },
    },
    imagePullPolicy: config.imagePullPolicy ?? "IfNotPresent",
    imagePullSecrets: config.imagePullSecrets ?? [],
    nodeSelector: config.nodeSelector ?? {},
    tolerations: config.tolerations ?? [],
    nodeName,
    runAsUser: config.runAsUser ?? process.getuid?.() ?? 0,
    runAsGroup: config.runAsGroup ?? process.getgid?.() ?? 0,
    propagationPolicy: config.propagationPolicy ?? "Background",
    pendingTimeoutMs: (config.pendingTimeoutSeconds ?? DEFAULT_PENDING_TIMEOUT_SECONDS) * 1000,
    terminationGracePeriodSeconds: config.terminationGracePeriodSeconds ?? 10,
    ttlSecondsAfterFinished: config.ttlSecondsAfterFinished ?? DEFAULT_TTL_SECONDS_AFTER_FINISHED,
    labels: config.labels ?? {},
  };
}

/**
 * Parses a `kubernetes` section read from a file; every issue is reported at its path under
 * `where` (`config.json: kubernetes.workVolume.claimName: ...`).
 */
export function parseKubernetesRuntimeConfig(
  value: unknown,
  where = "kubernetes",
): KubernetesRuntimeConfig {
  const parsed = KubernetesRuntimeConfigSchema.safeParse(value);
  if (!parsed.success) {
    const problems = parsed.error.issues.map(
      (issue) => `${[where, ...issue.path.map(String)].join(".")}: ${issue.message}`,
    );
    throw new KubernetesRuntimeError("invalid_config", problems.join("; "));
  }
  return parsed.data;
}

/** Whether a string is a valid label value (for the labels this package sets). */
export function isLabelValue(value: string): boolean {
  return value.length <= 63 && LABEL_VALUE.test(value);
}
