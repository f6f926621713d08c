// The server's routes as a client sends them, without their schemas. Importing the route table
// builds every schema of the API (zod objects for a few hundred types): tens of milliseconds in a
// bundle, a few hundred from the sources, which a command that makes one request would spend
// before sending it. The index is generated from the table (`pnpm --filter @deckhand/wire
// generate`), and a test fails when the two differ.
import generated from "./server-route-index.generated.json" with { type: "json" };
import type { HttpMethod } from "./server-routes.ts";

/** A route of the table as a client needs it to send a request and name its URL. */
export interface ServerRouteIndexEntry {
  operationId: string;
  method: HttpMethod;
  /** In the router's `:param` form. */
  path: string;
  /** Whether the route reads a request body. */
  body: boolean;
  /** The body's media type when it is not `application/json`. */
  bodyContentType?: string;
  websocket: boolean;
}

/** Every route of `serverRoutes`, in the same order. */
export const serverRouteIndex = generated.routes as readonly ServerRouteIndexEntry[];
