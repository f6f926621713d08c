export { ServerApiError, type ServerApiErrorCode } from "./server-api-error.ts";
export {
  type CallOptions,
  createServerClient,
  type RouteAnswer,
  type RouteCall,
  type RouteCallInput,
  type RouteLink,
  type RouteLocation,
  type ServerClient,
  type ServerClientOptions,
  type ServerRequest,
} from "./server-client.ts";
