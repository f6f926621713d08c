// Reading the API server's answers: a failed request carries a Status object (`reason`,
// `message`, `code`) in its body, which says far more than the HTTP status alone.
import { KubernetesRuntimeError } from "./kubernetes-runtime-error.ts";

interface StatusLike {
  code?: number;
  reason?: string;
  message?: string;
}

/** The HTTP code and the Status of a client-node ApiException (or of anything else). */
export function apiStatus(error: unknown): { code: number | null; status: StatusLike | null } {
  if (typeof error !== "object" || error === null) return { code: null, status: null };
  const record = error as { code?: unknown; body?: unknown };
  const code = typeof record.code === "number" ? record.code : null;
  let body = record.body;
  if (typeof body === "string") {
    try {
      body = JSON.parse(body);
    } catch {
      body = null;
    }
  }
  const status =
    typeof body === "object" && body !== null && (body as { kind?: unknown }).kind === "Status"
      ? (body as StatusLike)
      : null;
  return { code, status };
}

/** Whether a request failed because the object is not there (404 NotFound). */
export function isNotFound(error: unknown): boolean {
  const { code, status } = apiStatus(error);
  return code === 404 || status?.reason === "NotFound";
}

/**
 * A failed request as this package's error: what was being done, the server's reason and
 * message, and what to check for the reasons an operator can act on.
 */
export function apiFailure(action: string, error: unknown): KubernetesRuntimeError {
  const { code, status } = apiStatus(error);
  const said =
    status !== null
      ? `${status.code ?? code ?? ""} ${status.reason ?? ""}: ${status.message ?? ""}`.trim()
      : code !== null
        ? `HTTP ${code}`
        : error instanceof Error
          ? error.message
          : String(error);
  const reason = status?.reason;
  const advice =
    reason === "Forbidden" || code === 403
      ? "; the executor's service account needs create/delete on jobs and secrets and get/list/watch on pods and pods/log in that namespace (deploy/kubernetes has the Role)"
      : reason === "Unauthorized" || code === 401
        ? "; the executor's credentials were refused: check kubernetes.kubeconfig or its service account token"
        : reason === "NotFound" && /namespace/i.test(status?.message ?? "")
          ? "; create the namespace or set kubernetes.namespace to one that exists"
          : "";
  return new KubernetesRuntimeError("api_failed", `${action} failed: ${said}${advice}`, {
    cause: error,
  });
}
