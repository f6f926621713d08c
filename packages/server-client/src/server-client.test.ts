import {
  type ErrorResponse,
  type Project,
  type ServerOperationId,
  type ServerRoute,
  type ServerRouteOf,
  serverRoutes,
  WireHeader,
  WirePath,
} from "@deckhand/wire";
import fc from "fast-check";
import { describe, expect, expectTypeOf, it } from "vitest";
import { z } from "zod";
import { ServerApiError } from "./server-api-error.ts";
import { createServerClient, type RouteAnswer, type RouteCallInput } from "./server-client.ts";

interface Sent {
  method: string;
  url: string;
  headers: Headers;
  body: string | undefined;
  cache: string | undefined;
}

/** A fetch that records each request and answers with `answer(sent)`. */
function recordingFetch(answer: (sent: Sent) => Response | Promise<Response>) {
  const sent: Sent[] = [];
  const fetch = (async (input: string | URL | Request, init?: RequestInit) => {
    const request: Sent = {
      method: init?.method ?? "GET",
      url: String(input),
      headers: new Headers(init?.headers),
      body: typeof init?.body === "string" ? init.body : undefined,
      cache: (init as { cache?: string } | undefined)?.cache,
    };
    sent.push(request);
    return answer(request);
  }) as typeof globalThis.fetch;
  return { fetch, sent };
}

function json(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json" },
  });
}

const project: Project = {
  id: "00000000-0000-4000-8000-000000000001",
  name: "demo",
  repository_path: "/srv/demo",
  repository_url: null,
  default_branch: "main",
  created_at: "2025-01-01T00:00:00.000Z",
};

const notFound: ErrorResponse = {
  error: { code: "not_found", message: "no project with that id" },
};

describe("the server client's requests", () => {
  it("fills path parameters, sends the query as text and the body as labelled JSON", async () => {
    const { fetch, sent } = recordingFetch(() => json(project, 201));
    const client = createServerClient({ baseUrl: "http://deckhand.test:7420/", fetch });
    await client.createProject({ body: { repository_path: "/srv/demo" } });
    expect(sent[0]).toMatchObject({
      method: "POST",
      url: "http://deckhand.test:7420/api/projects",
      body: JSON.stringify({ repository_path: "/srv/demo" }),
    });
    expect(sent[0]!.headers.get("content-type")).toBe("application/json");

    const answer = json({
      running: false,
      exit_code: 0,
      output: "",
      next_cursor: 0,
      truncated: null,
    });
    const output = recordingFetch(() => answer);
    await createServerClient({ fetch: output.fetch, validateAnswers: false })
      .getSessionProcessOutput({
        params: { session_id: "a/b", process_id: "p 1" },
        query: { wait: true, cursor: 5, timeout_ms: undefined },
      })
      .catch(() => {});
    expect(output.sent[0]!.url).toBe(
      `${WirePath.serverApi}/sessions/a%2Fb/processes/p%201/output?wait=true&cursor=5`,
    );
    expect(output.sent[0]!.headers.has("content-type")).toBe(false);
    expect(output.sent[0]!.body).toBeUndefined();
  });

  it("labels a merge patch as one and passes the caller's headers and cache mode", async () => {
    const { fetch, sent } = recordingFetch(() =>
      json({ config: {}, etag: '"v2"', diagnostics: [] }),
    );
    const client = createServerClient({ fetch });
    await client.patchProvidersConfig(
      { body: { providers: { codex: { enabled: false } } } },
      { headers: { "If-Match": '"v1"' }, cache: "no-store" },
    );
    expect(sent[0]!.headers.get("content-type")).toBe("application/merge-patch+json");
    expect(sent[0]!.headers.get("if-match")).toBe('"v1"');
    expect(sent[0]!.cache).toBe("no-store");
  });

  it("sends the bearer token, read again for each request when given as a function", async () => {
    const { fetch, sent } = recordingFetch(() => json({ projects: [] }));
    await createServerClient({ fetch, token: "s3cret" }).listProjects();
    let token: string | null = null;
    const client = createServerClient({ fetch, token: () => token });
    await client.listProjects();
    token = "later";
    await client.listProjects();
    expect(sent.map((request) => request.headers.get(WireHeader.authorization))).toEqual([
      "Bearer s3cret",
      null,
      "Bearer later",
    ]);
  });

  it("builds route URLs, WebSocket ones with a ws scheme", () => {
    const client = createServerClient({ baseUrl: "https://deckhand.example/" });
    expect(client.streamBatchRun.url({ params: { batch_run_id: "r1" }, query: { after: 2 } })).toBe(
      "wss://deckhand.example/api/batch-runs/r1/stream?after=2",
    );
    expect(client.getBatchRun.url({ params: { batch_run_id: "r1" } })).toBe(
      "https://deckhand.example/api/batch-runs/r1",
    );
    expect(createServerClient().streamSessionActivity.url()).toBe(
      `${WirePath.serverApi}/session-activity`,
    );
  });
});

describe("the server client's answers", () => {
  it("checks an answer with its route's schema, and takes the JSON as sent when told not to", async () => {
    const odd = { ...project, id: "not-a-uuid" };
    const { fetch } = recordingFetch(() => json(odd));
    const checked = await createServerClient({ fetch, baseUrl: "http://deckhand.test" })
      .getProject({ params: { project_id: project.id } })
      .catch((error: unknown) => error);
    expect(checked).toBeInstanceOf(ServerApiError);
    expect(checked).toMatchObject({ status: 200, code: "unexpected_answer" });
    expect((checked as Error).message).toMatch(
      /^the server at http:\/\/deckhand\.test answered GET \/api\/projects\/[-0-9a-f]+ with something that is not a Deckhand API answer \(id: .*\); is it a Deckhand server of the same version\?$/,
    );
    const unchecked = await createServerClient({ fetch, validateAnswers: false }).getProject({
      params: { project_id: project.id },
    });
    expect(unchecked).toEqual(odd);
  });

  it("answers null for 204, text for a text route, and health's 503 as its body", async () => {
    const answers: Record<string, () => Response> = {
      "DELETE /api/tokens/t1": () => new Response(null, { status: 204 }),
      "GET /api/providers/codex/diagnostic": () => new Response("resolved: /usr/bin/codex\n"),
      "GET /api/health": () =>
        json(
          {
            status: "degraded",
            version: "0.1.0",
            database: { ok: false, kind: "pglite" },
            queue: { ok: true },
            agent: null,
            agents: [],
          },
          503,
        ),
    };
    const { fetch } = recordingFetch((sent) =>
      answers[`${sent.method} ${new URL(sent.url, "http://x").pathname}`]!(),
    );
    const client = createServerClient({ fetch });
    expect(await client.revokeApiToken({ params: { token_id: "t1" } })).toBeNull();
    expect(await client.getProviderDiagnostic({ params: { provider_id: "codex" } })).toBe(
      "resolved: /usr/bin/codex\n",
    );
    expect(await client.getHealth()).toMatchObject({ status: "degraded", database: { ok: false } });
  });

  it("throws the server's error with its status, code and message", async () => {
    const { fetch } = recordingFetch(() => json(notFound, 404));
    const failure = await createServerClient({ fetch })
      .getProject({ params: { project_id: project.id } })
      .catch((error: unknown) => error);
    expect(ServerApiError.isInstance(failure)).toBe(true);
    expect(failure).toMatchObject({
      status: 404,
      code: "not_found",
      message: notFound.error.message,
    });
  });

  it("reads an error body even on a status the route answers with its schema", async () => {
    const internal: ErrorResponse = { error: { code: "internal", message: "shutting down" } };
    const { fetch } = recordingFetch(() => json(internal, 503));
    const failure = await createServerClient({ fetch, validateAnswers: false })
      .getHealth()
      .catch((error: unknown) => error);
    expect(failure).toMatchObject({ status: 503, code: "internal", message: "shutting down" });
  });

  it("says what came back when an error is not the server's", async () => {
    const { fetch } = recordingFetch(
      () => new Response("<html>Bad Gateway</html>", { status: 502 }),
    );
    const failure = await createServerClient({ fetch })
      .listBatchRuns({ query: { limit: 5 } })
      .catch((error: unknown) => error);
    expect(failure).toMatchObject({
      status: 502,
      code: "unexpected_answer",
      message: "GET /api/batch-runs?limit=5 answered 502: <html>Bad Gateway</html>",
    });
    const html = recordingFetch(() => new Response("<html>", { status: 200 }));
    const notJson = await createServerClient({ fetch: html.fetch, validateAnswers: false })
      .listProjects()
      .catch((error: unknown) => error);
    expect(notJson).toMatchObject({ status: 200, code: "unexpected_answer" });
    expect((notJson as Error).message).toContain("(not JSON)");
  });

  it("says the server cannot be reached, with why, and lets an abort through as it is", async () => {
    const refused = (async () => {
      throw new TypeError("fetch failed", { cause: { code: "ECONNREFUSED" } });
    }) as typeof fetch;
    const failure = await createServerClient({ baseUrl: "http://127.0.0.1:9", fetch: refused })
      .listProjects()
      .catch((error: unknown) => error);
    expect(failure).toMatchObject({
      status: 0,
      code: "unreachable",
      message: "cannot reach the Deckhand server at http://127.0.0.1:9 (ECONNREFUSED)",
    });

    const controller = new AbortController();
    const aborting = (async (_input: string | URL | Request, init?: RequestInit) => {
      controller.abort();
      throw init?.signal?.reason;
    }) as typeof fetch;
    const aborted = await createServerClient({ fetch: aborting })
      .listProjects(undefined, { signal: controller.signal })
      .catch((error: unknown) => error);
    expect(aborted).not.toBeInstanceOf(ServerApiError);
    expect((aborted as Error).name).toBe("AbortError");
  });

  it("lets onError see each failure and put another in its place", async () => {
    const { fetch } = recordingFetch(() => json(notFound, 404));
    const seen: string[] = [];
    const client = createServerClient({
      fetch,
      onError: (error, request) => {
        seen.push(`${request.operationId} ${request.method} ${request.path} ${error.status}`);
        return new ServerApiError(error.status, error.code, "Not found here.");
      },
    });
    const failure = await client
      .getProject({ params: { project_id: "p" } })
      .catch((error) => error);
    expect(failure).toMatchObject({ code: "not_found", message: "Not found here." });
    expect(seen).toEqual(["getProject GET /api/projects/p 404"]);
  });
});

/** A value of a query field as a request may carry it, from the field's JSON Schema. */
function arbitraryOf(field: {
  type?: string;
  enum?: unknown[];
  format?: string;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
}): fc.Arbitrary<unknown> {
  if (field.enum !== undefined) return fc.constantFrom(...field.enum);
  if (field.type === "boolean") return fc.boolean();
  if (field.type === "integer" || field.type === "number") {
    return fc.integer({
      min: Math.max(field.minimum ?? 0, -1_000_000),
      max: Math.min(field.maximum ?? 1_000_000, 1_000_000),
    });
  }
  if (field.format === "uuid") return fc.uuid({ version: 4 });
  return fc.string({
    minLength: field.minLength ?? 0,
    maxLength: Math.min(field.maxLength ?? 40, 40),
  });
}

describe("the server client's queries", () => {
  const routesWithQueries = (serverRoutes as readonly ServerRoute[]).filter(
    (route): route is ServerRoute & { query: z.ZodType } => route.query !== undefined,
  );

  it.each(routesWithQueries.map((route) => [route.operationId, route] as const))(
    "sends %s's query so that the route's schema reads back what was given",
    (_name, route) => {
      // What a request may carry, read by the route's schema into what its handler sees: the
      // client must send that so the schema reads back the same.
      const shape = z.toJSONSchema(route.query, { io: "input", unrepresentable: "any" }) as {
        properties?: Record<string, Parameters<typeof arbitraryOf>[0]>;
        required?: string[];
      };
      const fields = Object.entries(shape.properties ?? {});
      expect(fields.length).toBeGreaterThan(0);
      const query = fc.record(
        Object.fromEntries(fields.map(([name, field]) => [name, arbitraryOf(field)])),
        { requiredKeys: shape.required ?? [] },
      );
      const client = createServerClient() as unknown as Record<
        string,
        { url(location: { params?: Record<string, string>; query?: unknown }): string }
      >;
      const params = Object.fromEntries(
        [...route.path.matchAll(/:([a-z_]+)/g)].map((match) => [match[1]!, "x"]),
      );
      fc.assert(
        fc.property(query, (carried) => {
          const value = route.query.parse(carried);
          const url = new URL(client[route.operationId]!.url({ params, query: value }), "http://x");
          const read = route.query.parse(Object.fromEntries(url.searchParams));
          expect(read).toEqual(value);
        }),
      );
    },
  );
});

/** Whether two types are the same (not merely assignable either way). */
type Same<A, B> =
  (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;

/** Routes whose success schema reads JSON into something else than the JSON (a default, a transform). */
type ReshapedAnswers = {
  [Id in ServerOperationId]: ServerRouteOf<Id>["success"]["schema"] extends z.ZodType
    ? Same<
        z.input<ServerRouteOf<Id>["success"]["schema"]>,
        z.output<ServerRouteOf<Id>["success"]["schema"]>
      > extends true
      ? never
      : Id
    : never;
}[ServerOperationId];

// The type assertions are checked by `tsc`; vitest runs them as no-ops.
describe("the server client's types", () => {
  it("take each route's input and answer from its schemas", () => {
    expectTypeOf<RouteCallInput<ServerRouteOf<"createSession">>>().toMatchTypeOf<{
      params: { project_id: string };
      body: { branch?: string | undefined };
    }>();
    expectTypeOf<RouteCallInput<ServerRouteOf<"closeSession">>["query"]>().toEqualTypeOf<
      { force?: boolean | undefined } | undefined
    >();
    expectTypeOf<RouteAnswer<ServerRouteOf<"getProject">>>().toEqualTypeOf<Project>();
    expectTypeOf<RouteAnswer<ServerRouteOf<"revokeApiToken">>>().toEqualTypeOf<null>();
    expectTypeOf<RouteAnswer<ServerRouteOf<"getProviderDiagnostic">>>().toEqualTypeOf<string>();
  });

  it("give an unchecked answer the same type as a checked one: no success schema reshapes JSON", () => {
    expectTypeOf<ReshapedAnswers>().toEqualTypeOf<never>();
  });

  it("leave a WebSocket route only its URL", () => {
    type Stream = ReturnType<typeof createServerClient>["streamBatchRun"];
    expectTypeOf<Stream>().not.toBeFunction();
    expect(typeof createServerClient().streamBatchRun).toBe("object");
  });
});
