import { AgentBackendError } from "../../errors.ts";

/**
 * Why a model request failed. Retry decisions branch on `retryable`; the kind is for the
 * message shown to a person and for tests.
 */
export type ModelClientErrorKind =
  /** The server answered with an error status before streaming. */
  | "http_status"
  /** The connection could not be made, or broke while streaming. */
  | "connection"
  /** The stream ended cleanly but before `response.completed` or `response.failed`. */
  | "stream_incomplete"
  /** No bytes arrived for longer than the idle timeout. */
  | "idle_timeout"
  /** The model reported a failure in the stream (`response.failed`, `error`). */
  | "response_failed"
  /** The stream is not what the Responses API sends: malformed JSON, a known event misshapen. */
  | "protocol"
  /** The caller's AbortSignal fired. */
  | "aborted";

export interface ModelClientErrorDetails {
  retryable: boolean;
  status?: number;
  /** What the server asked us to wait (Retry-After, retry-after-ms, "try again in 2s"). */
  retryAfterMs?: number;
  /** The provider's own error code, e.g. `rate_limit_exceeded`. */
  providerCode?: string;
  cause?: unknown;
}

/**
 * A failed model request. It is an AgentBackendError so callers of the package catch one type;
 * its code is `aborted` or `model_request_failed`, and `kind` holds the precise reason.
 */
export class ModelClientError extends AgentBackendError {
  static override readonly errorName: string = "ModelClientError";
  readonly kind: ModelClientErrorKind;
  readonly retryable: boolean;
  readonly status: number | undefined;
  readonly retryAfterMs: number | undefined;
  readonly providerCode: string | undefined;

  constructor(kind: ModelClientErrorKind, message: string, details: ModelClientErrorDetails) {
    super(kind === "aborted" ? "aborted" : "model_request_failed", message, {
      cause: details.cause,
    });
    this.kind = kind;
    this.retryable = details.retryable;
    this.status = details.status;
    this.retryAfterMs = details.retryAfterMs;
    this.providerCode = details.providerCode;
  }
}
