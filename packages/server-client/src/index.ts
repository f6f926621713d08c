export { ServerApiError, type ServerApiErrorCode } from "./server-api-error.ts";
export {
  type CacheMode,
  type CallOptions,
  createServerClient,
  type RouteAnswer,
  type RouteBody,
  type RouteCall,
  type RouteCallInput,
  type RouteLink,
  type RouteLocation,
  type RouteParams,
  type RouteQuery,
  type ServerClient,
  type ServerClientOptions,
  type ServerRequest,
} from "./server-client.ts";
