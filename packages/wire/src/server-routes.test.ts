import { describe, expect, expectTypeOf, it } from "vitest";
import type { z } from "zod";
import type { CreateSessionRequest, PendingChangeStatusSchema } from "./server-api.ts";
import {
  type PathParameterNames,
  type RouteInput,
  type RouteResult,
  type ServerRouteOf,
  serverRoutes,
} from "./server-routes.ts";

// The type assertions are checked by `tsc` (the package's typecheck); the runtime ones by vitest.
describe("the route table's types", () => {
  it("give each route's handler its path parameters, query and body from its schemas", () => {
    type CreateSession = RouteInput<ServerRouteOf<"createSession">>;
    expectTypeOf<CreateSession["params"]>().toEqualTypeOf<{ project_id: string }>();
    expectTypeOf<CreateSession["body"]>().toEqualTypeOf<CreateSessionRequest>();

    type ListPendingChanges = RouteInput<ServerRouteOf<"listPendingChanges">>;
    expectTypeOf<ListPendingChanges["query"]>().toEqualTypeOf<{
      status?: z.output<typeof PendingChangeStatusSchema> | undefined;
    }>();
    expectTypeOf<ListPendingChanges["body"]>().toEqualTypeOf<undefined>();

    type AnswerPermission = RouteInput<ServerRouteOf<"answerPermission">>;
    expectTypeOf<AnswerPermission["params"]>().toEqualTypeOf<{
      session_id: string;
      agent: string;
      request_id: string;
    }>();
    expectTypeOf<RouteResult<ServerRouteOf<"revokeApiToken">>>().toEqualTypeOf<null>();
    expectTypeOf<PathParameterNames<"/a/:x/b/:y">>().toEqualTypeOf<"x" | "y">();
  });

  it("keep one route per operation id, each path parameter named once", () => {
    const ids = serverRoutes.map((route) => route.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    for (const route of serverRoutes) {
      const names = [...route.path.matchAll(/:([a-z_]+)/g)].map((match) => match[1]);
      expect(new Set(names).size, route.operationId).toBe(names.length);
    }
  });
});
