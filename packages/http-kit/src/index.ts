export {
  type BearerAuthOptions,
  bearerAuth,
  bearerTokenOf,
  tokenMatches,
} from "./bearer-auth.ts";
export {
  type ErrorHandlingOptions,
  errorResponse,
  installErrorHandling,
} from "./error-handling.ts";
export { HttpError } from "./http-error.ts";
export { keepWebSocketAlive, type PingableSocket } from "./keep-alive.ts";
export { type Listening, listen } from "./listen.ts";
export { logRequests, type RequestLogEntry } from "./request-log.ts";
export { refuseUpgrade, upgradeBearerToken } from "./upgrade-refusal.ts";
export { describeZodError, parseJsonBody, parseQuery } from "./validation.ts";
