import { existsSync } from "node:fs";
import { KubeConfig } from "@kubernetes/client-node";
import type { KubernetesRuntimeSettings } from "./kubernetes-config.ts";
import { KubernetesRuntimeError } from "./kubernetes-runtime-error.ts";

/**
 * The cluster connection the settings name: their kubeconfig file (and context), or the pod's
 * own service account when the executor runs in the cluster.
 */
export function loadKubeConfig(
  settings: Pick<KubernetesRuntimeSettings, "kubeconfig" | "context">,
  environment: Readonly<Record<string, string | undefined>> = process.env,
): KubeConfig {
  const config = new KubeConfig();
  if (settings.kubeconfig !== null) {
    if (!existsSync(settings.kubeconfig)) {
      throw new KubernetesRuntimeError(
        "no_cluster",
        `kubernetes.kubeconfig ${settings.kubeconfig} does not exist; point it at a kubeconfig file, or leave it out when the executor runs in the cluster`,
      );
    }
    try {
      config.loadFromFile(settings.kubeconfig);
    } catch (error) {
      throw new KubernetesRuntimeError(
        "no_cluster",
        `kubernetes.kubeconfig ${settings.kubeconfig} could not be read: ${error instanceof Error ? error.message : String(error)}`,
        { cause: error },
      );
    }
  } else {
    if (!environment.KUBERNETES_SERVICE_HOST || !environment.KUBERNETES_SERVICE_PORT) {
      throw new KubernetesRuntimeError(
        "no_cluster",
        "the kubernetes runtime has no kubeconfig and this process is not in a cluster (KUBERNETES_SERVICE_HOST is not set); set kubernetes.kubeconfig in config.json, or run the executor in the cluster",
      );
    }
    config.loadFromCluster();
  }
  if (settings.context !== null) {
    if (config.getContextObject(settings.context) === null) {
      throw new KubernetesRuntimeError(
        "no_cluster",
        `kubernetes.context ${settings.context} is not in ${settings.kubeconfig ?? "the in-cluster configuration"}; use one of ${config
          .getContexts()
          .map((context) => context.name)
          .join(", ")}`,
      );
    }
    config.setCurrentContext(settings.context);
  }
  return config;
}
