export {
  type BearerAuthOptions,
  bearerAuth,
  bearerTokenOf,
  tokenMatches,
} from "./bearer-auth.ts";
export {
  type BodyLimitOptions,
  bodyTooLarge,
  DEFAULT_MAX_BODY_BYTES,
  limitBody,
} from "./body-limit.ts";
export {
  type ErrorHandlingOptions,
  errorAnswer,
  errorResponse,
  installErrorHandling,
} from "./error-handling.ts";
export {
  ERROR_CODE_HTTP_STATUSES,
  type HttpStatusOf,
  httpStatusOf,
  isHttpStatusOf,
} from "./error-status.ts";
export { HttpError } from "./http-error.ts";
export { keepWebSocketAlive, type PingableSocket } from "./keep-alive.ts";
export { type Listening, listen, MAX_HEADER_BYTES, type NodeHandler } from "./listen.ts";
export {
  admitUpgrade,
  type GuardedRequest,
  guardOrigin,
  isLoopbackHost,
  normalizeHostPattern,
  normalizeOrigin,
  OriginPolicy,
  type OriginPolicyOptions,
  type OriginRefusal,
} from "./origin-guard.ts";
export { logRequests, type RequestLogEntry, requestLogEntry } from "./request-log.ts";
export {
  type HeaderTarget,
  NO_CONTENT_SECURITY_POLICY,
  securityHeaderSetter,
  securityHeaders,
} from "./security-headers.ts";
export { refuseUpgrade, upgradeBearerToken } from "./upgrade-refusal.ts";
export {
  describeZodError,
  discardBody,
  parseJsonBody,
  parsePathParameters,
  parseQuery,
  readJsonBody,
} from "./validation.ts";
