import { discardBody, parseJsonBody, parsePathParameters, parseQuery } from "@deckhand/http-kit";
import type { RouteInput, RouteResult, ServerRoute } from "@deckhand/wire";
import type { Context, Hono } from "hono";

/** A route's handler: its validated input, typed from the route's schemas, and its answer. */
export type RouteHandler<Route extends ServerRoute> = (
  input: RouteInput<Route> & { context: Context },
) => Promise<RouteResult<Route> | Response>;

/**
 * Serves one route of the wire's table: the request's body, path parameters and query are
 * validated with the route's schemas, then the handler gets what they output and answers with the
 * body for the route's success status (or a Response, as is).
 *
 * The handler's types are computed from the same route (as hono's validator types
 * `c.req.valid`), but TypeScript cannot follow a generic route from the schemas checked here to
 * those types: the assertions below are that one step, kept here so no handler needs one.
 */
export function serveRoute<Route extends ServerRoute>(
  app: Hono,
  route: Route,
  handler: RouteHandler<Route>,
): void {
  const shape: ServerRoute = route;
  app.on(shape.method.toUpperCase(), shape.path, async (context) => {
    // The body first: an answer sent while the body is unread can reach the client as a
    // connection reset instead.
    let body: unknown;
    if (shape.body) body = await parseJsonBody(context, shape.body);
    else await discardBody(context);
    const params = parsePathParameters(context);
    const query = shape.query ? parseQuery(context, shape.query) : {};
    const input = { params, query, body, context } as RouteInput<Route> & { context: Context };
    const result: unknown = await handler(input);
    if (result instanceof Response) return result;
    if (shape.success.schema === null) return context.body(null, shape.success.status as 204);
    return context.json(result as object, shape.success.status as 200);
  });
}
