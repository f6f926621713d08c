import { DeckhandError } from "@deckhand/wire";

export type KubernetesRuntimeErrorCode =
  /** config.json's `kubernetes` section is invalid; the message names the field. */
  | "invalid_config"
  /** No kubeconfig could be loaded (the file is missing, or no in-cluster service account). */
  | "no_cluster"
  /** A step cannot be expressed as a Job: its checkout is not on the work volume, say. */
  | "invalid_step"
  /** The API server refused or failed a request; the message carries its Status. */
  | "api_failed"
  /** The step's pod ended without the step's own exit: evicted, out of memory, never started. */
  | "pod_failed";

/**
 * The one error type this package throws. `isInstance` recognises instances from another copy
 * of the package, where `instanceof` would not.
 */
export class KubernetesRuntimeError extends DeckhandError<KubernetesRuntimeErrorCode> {
  static override readonly errorName = "KubernetesRuntimeError";
}
