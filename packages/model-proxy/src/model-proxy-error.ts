import { DeckhandError, type ErrorCode, type ModelProxyErrorCode } from "@deckhand/wire";

/** Every code this package's errors carry: the shared wire codes plus the proxy's own. */
export type ModelProxyErrorCodeName = ErrorCode | ModelProxyErrorCode;

/**
 * The one error type of this package. `code` is stable for callers to branch on; the message
 * never contains a token, because error text ends up in logs and responses.
 */
export class ModelProxyError extends DeckhandError<ModelProxyErrorCodeName> {
  static override readonly errorName = "ModelProxyError";
}
