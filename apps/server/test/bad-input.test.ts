import { readFileSync } from "node:fs";
import { MAX_HEADER_BYTES } from "@deckhand/http-kit";
import {
  type Chat,
  type ErrorResponse,
  type Project,
  ServerPath,
  type Session,
  serverPath,
} from "@deckhand/wire";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  backends,
  Cleanups,
  checkResponse,
  databaseUrlFor,
  makeRepository,
  startTestServer,
  type TestServer,
  tempDir,
} from "./harness.ts";

/** The checked-in OpenAPI document: every route the server serves, as clients see it. */
const openApi = JSON.parse(
  readFileSync(new URL("../../../packages/wire/openapi.json", import.meta.url), "utf8"),
) as {
  paths: Record<
    string,
    Record<
      string,
      {
        operationId: string;
        parameters?: { name: string; in: "path" | "query" }[];
        requestBody?: {
          content: Record<string, { schema: { properties?: Record<string, unknown> } }>;
        };
      }
    >
  >;
};

interface Operation {
  operationId: string;
  method: string;
  /** The OpenAPI path, `{param}` form. */
  template: string;
  pathParameters: string[];
  queryParameters: string[];
  /** Body properties, when the route takes a JSON body. */
  bodyProperties: string[] | null;
  /** The body's media type (`application/json`, or a JSON merge patch's). */
  mediaType: string;
}

const operations: Operation[] = Object.entries(openApi.paths)
  .flatMap(([template, methods]) =>
    Object.entries(methods).map(([method, operation]) => ({
      operationId: operation.operationId,
      method: method.toUpperCase(),
      template,
      pathParameters: (operation.parameters ?? [])
        .filter((p) => p.in === "path")
        .map((p) => p.name),
      queryParameters: (operation.parameters ?? [])
        .filter((p) => p.in === "query")
        .map((p) => p.name),
      bodyProperties: operation.requestBody
        ? Object.keys(Object.values(operation.requestBody.content)[0]?.schema.properties ?? {})
        : null,
      mediaType: Object.keys(operation.requestBody?.content ?? {})[0] ?? "application/json",
    })),
  )
  // Deleting runs last, so the session and token the other routes are given still exist.
  .sort((a, b) => Number(a.method === "DELETE") - Number(b.method === "DELETE"));

const NUL = "a\u0000b";
const HUGE = "x".repeat(2_000_000);
const DEEP = `${"[".repeat(50_000)}${"]".repeat(50_000)}`;
const DEEP_OBJECT = `${'{"a":'.repeat(50_000)}1${"}".repeat(50_000)}`;

/** Raw values for path parameters: each must be answered 4xx or 2xx, never 5xx. */
const BAD_PATH_VALUES = ["%00", "a%00b", "%ED%A0%80", "%ZZ", "x".repeat(4_000), "..%2F..%2Fetc"];

describe.each(backends)("bad input on $backend", ({ backend }) => {
  const cleanups = new Cleanups();
  let harness: TestServer;
  let project: Project;
  let session: Session;
  let chat: Chat;

  beforeAll(async () => {
    const repository = makeRepository(cleanups);
    harness = await startTestServer(cleanups, {
      dataDir: tempDir(cleanups),
      config: { databaseUrl: await databaseUrlFor(cleanups, backend) },
    });
    project = (
      await harness.api<Project>("POST", ServerPath.projects, {
        body: { repository_path: repository },
      })
    ).body;
    session = (
      await harness.api<Session>(
        "POST",
        serverPath(ServerPath.projectSessions, { project_id: project.id }),
        { body: {} },
      )
    ).body;
    chat = (
      await harness.api<Chat>(
        "POST",
        serverPath(ServerPath.sessionChats, { session_id: session.id }),
        { body: {} },
      )
    ).body;
  });
  afterAll(() => cleanups.run());

  /** Sends a raw request; a 5xx, or an answer that is not in the wire's shape, fails the test. */
  async function send(method: string, path: string, body?: string, mediaType = "application/json") {
    const response = await fetch(`${harness.server.url}${path}`, {
      method,
      ...(body !== undefined ? { body, headers: { "content-type": mediaType } } : {}),
    });
    const text = await response.text();
    const where = `${method} ${path.slice(0, 120)} with ${body === undefined ? "no body" : body.slice(0, 80)}`;
    expect(response.status, `${where} answered ${response.status}: ${text}`).toBeLessThan(500);
    checkResponse(method, path, response.status, text);
    return { status: response.status, text };
  }

  function errorOf(text: string): ErrorResponse["error"] {
    return (JSON.parse(text) as ErrorResponse).error;
  }

  function pathFor(operation: Operation, override: Record<string, string> = {}): string {
    const real: Record<string, string> = {
      project_id: project.id,
      session_id: session.id,
      chat_id: chat.id,
      agent: "deckhand",
      provider_id: "deckhand",
    };
    return operation.template.replace(/\{([a-z_]+)\}/g, (_, name: string) =>
      name in override
        ? override[name]!
        : encodeURIComponent(real[name] ?? "00000000-0000-4000-8000-000000000000"),
    );
  }

  describe("the observed 500s", () => {
    /** Where each text field of the observed 500s is sent, by route. */
    const textFields: [operationId: string, field: string, path: () => string, body: object][] = [
      ["createApiToken", "name", () => ServerPath.apiTokens, {}],
      ["createProject", "name", () => ServerPath.projects, { repository_path: "." }],
      [
        "createSession",
        "title",
        () => serverPath(ServerPath.projectSessions, { project_id: project.id }),
        {},
      ],
      [
        "createChat",
        "title",
        () => serverPath(ServerPath.sessionChats, { session_id: session.id }),
        {},
      ],
      [
        "createMessage",
        "text",
        () => serverPath(ServerPath.chatMessages, { chat_id: chat.id }),
        { agent: "deckhand" },
      ],
    ];
    it.each(textFields)(
      "%s refuses a NUL in %s with a 400 naming the field",
      async (_, field, path, body) => {
        const { status, text } = await send(
          "POST",
          path(),
          JSON.stringify({ ...body, [field]: NUL }),
        );
        expect(status).toBe(400);
        expect(errorOf(text)).toMatchObject({ code: "invalid_request" });
        expect(errorOf(text).message).toMatch(new RegExp(`^${field}: contains a NUL character`));
      },
    );

    it("refuses a NUL in the usage query's job_id with a 400 naming it", async () => {
      const { status, text } = await send("GET", `${ServerPath.usage}?job_id=%00`);
      expect(status).toBe(400);
      expect(errorOf(text).message).toMatch(/^job_id: contains a NUL character/);
    });

    it("refuses a lone surrogate, which PostgreSQL would store as U+FFFD, with a 400", async () => {
      const { status, text } = await send("POST", ServerPath.apiTokens, '{"name": "a\\ud800"}');
      expect(status).toBe(400);
      expect(errorOf(text).message).toMatch(/^name: contains a lone surrogate/);
    });

    it("refuses branch HEAD with a 400 naming the field", async () => {
      const { status, text } = await send(
        "POST",
        serverPath(ServerPath.projectSessions, { project_id: project.id }),
        JSON.stringify({ branch: "HEAD" }),
      );
      expect(status).toBe(400);
      expect(errorOf(text).message).toMatch(/^branch: must be a valid git branch name: HEAD/);
    });

    it("answers a branch git cannot create (main/sub while main exists) with 409, not a git failure", async () => {
      const { status, text } = await send(
        "POST",
        serverPath(ServerPath.projectSessions, { project_id: project.id }),
        JSON.stringify({ branch: "main/sub" }),
      );
      expect(status).toBe(409);
      expect(errorOf(text)).toMatchObject({ code: "conflict" });
      expect(errorOf(text).message).toMatch(
        /^cannot create branch main\/sub .*choose another branch name$/,
      );
    });

    it("answers a 50,000-deep providers config patch with 400", async () => {
      for (const deep of [DEEP_OBJECT, DEEP]) {
        const { status, text } = await send("PATCH", ServerPath.providersConfig, deep);
        expect(status).toBe(400);
        expect(errorOf(text).message).toContain("deeper than 64 levels");
      }
    });

    it("answers a body over the limit with 413 body_too_large", async () => {
      const { status, text } = await send(
        "POST",
        ServerPath.apiTokens,
        JSON.stringify({ name: "x".repeat(11 * 1024 * 1024) }),
      );
      expect(status).toBe(413);
      expect(errorOf(text)).toMatchObject({ code: "body_too_large" });
      expect(errorOf(text).message).toContain("maxRequestBodyBytes in config.json");
    });

    it("answers a URL over 16 KiB with 414 uri_too_long instead of a reset", async () => {
      const response = await fetch(
        `${harness.server.url}${ServerPath.usage}?job_id=${"j".repeat(MAX_HEADER_BYTES * 4)}`,
      );
      expect(response.status).toBe(414);
      expect(errorOf(await response.text()).code).toBe("uri_too_long");
    });
  });

  describe.each(operations)("$method $template ($operationId)", (operation) => {
    it("answers malformed JSON, wrong types, NUL, huge strings and deep nesting without a 5xx", async () => {
      const path = pathFor(operation);
      if (operation.bodyProperties !== null || operation.method !== "GET") {
        const properties = operation.bodyProperties ?? [];
        const bodies = [
          "{",
          "[]",
          '"text"',
          "null",
          "12",
          DEEP,
          DEEP_OBJECT,
          '{"a\\u0000": 1}',
          JSON.stringify(Object.fromEntries(properties.map((name) => [name, 12_345]))),
          JSON.stringify(Object.fromEntries(properties.map((name) => [name, { nested: [] }]))),
          ...properties.map((name) => JSON.stringify({ [name]: NUL })),
          ...properties.map((name) => JSON.stringify({ [name]: [NUL] })),
          ...properties.map((name) => JSON.stringify({ [name]: HUGE })),
        ];
        for (const body of bodies) await send(operation.method, path, body, operation.mediaType);
      }
      for (const name of operation.queryParameters) {
        for (const value of ["%00", "%ED%A0%80", "%ZZ", "x".repeat(4_000), "true&x=1"]) {
          await send(operation.method, `${path}?${name}=${value}`);
        }
      }
      for (const name of operation.pathParameters) {
        for (const value of BAD_PATH_VALUES) {
          await send(operation.method, pathFor(operation, { [name]: value }));
        }
      }
    });
  });

  it("logs no request as failed", () => {
    const failed = harness
      .logs()
      .split("\n")
      .filter((line) => line.includes('"level":50'));
    expect(failed).toEqual([]);
  });
});
