import type { ErrorResponse } from "@deckhand/wire";
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { installErrorHandling } from "./error-handling.ts";
import { HttpError } from "./http-error.ts";
import {
  describeZodError,
  jsonDepth,
  MAX_JSON_DEPTH,
  parseJsonBody,
  parsePathParameters,
  parseQuery,
  readJsonBody,
} from "./validation.ts";

function app() {
  const unexpected: unknown[] = [];
  const application = new Hono();
  installErrorHandling(application, { onUnexpectedError: (error) => unexpected.push(error) });
  application.post("/body", async (context) =>
    context.json(await parseJsonBody(context, z.strictObject({ name: z.string().min(1) }))),
  );
  application.post("/any", async (context) => context.json({ value: await readJsonBody(context) }));
  application.get("/items/:item_id", (context) => context.json(parsePathParameters(context)));
  application.post("/tags", async (context) =>
    context.json(
      await parseJsonBody(
        context,
        z.strictObject({ tags: z.array(z.object({ label: z.string() })) }),
      ),
    ),
  );
  application.get("/query", (context) =>
    context.json(parseQuery(context, z.strictObject({ limit: z.coerce.number().int().max(5) }))),
  );
  application.get("/teapot", () => {
    throw new HttpError(409, "conflict", "already exited");
  });
  application.get("/crash", () => {
    throw new Error("secret-token-value leaked in a message");
  });
  return { application, unexpected };
}

describe("http-kit", () => {
  it("answers invalid JSON with 400 invalid_json", async () => {
    const response = await app().application.request("/body", {
      method: "POST",
      body: "{",
      headers: { "content-type": "application/json" },
    });
    expect(response.status).toBe(400);
    const body = (await response.json()) as ErrorResponse;
    expect(body.error.code).toBe("invalid_json");
    expect(body.error.message).toMatch(/^request body is not valid JSON/);
  });

  it("names every invalid field with its path", async () => {
    const response = await app().application.request("/body", {
      method: "POST",
      body: JSON.stringify({ name: "", extra: 1 }),
      headers: { "content-type": "application/json; charset=utf-8" },
    });
    expect(response.status).toBe(400);
    const body = (await response.json()) as ErrorResponse;
    expect(body.error.code).toBe("invalid_request");
    expect(body.error.message).toContain("name: ");
    expect(body.error.message).toContain('Unrecognized key: "extra"');
  });

  it("refuses a JSON body sent as anything but application/json with 415, as a page's simple request is", async () => {
    // The three media types a page may send across origins without a preflight, and none.
    for (const type of [
      "text/plain;charset=UTF-8",
      "application/x-www-form-urlencoded",
      "multipart/form-data; boundary=x",
      undefined,
    ]) {
      const response = await app().application.request("/body", {
        method: "POST",
        body: new TextEncoder().encode(JSON.stringify({ name: "a" })),
        ...(type !== undefined ? { headers: { "content-type": type } } : {}),
      });
      expect(response.status, String(type)).toBe(415);
      const body = (await response.json()) as ErrorResponse;
      expect(body.error.code).toBe("unsupported_media_type");
      expect(body.error.message).toContain('"Content-Type: application/json"');
    }
    const typed = await app().application.request("/body", {
      method: "POST",
      body: JSON.stringify({ name: "a" }),
      headers: { "Content-Type": "Application/JSON; charset=utf-8" },
    });
    expect(typed.status).toBe(200);
  });

  it("takes an empty body as {} where a route allows it, whatever its type, and other types where a route names them", async () => {
    const application = new Hono();
    installErrorHandling(application);
    application.post("/optional", async (context) =>
      context.json({ value: await readJsonBody(context, { allowEmpty: true }) }),
    );
    application.patch("/merge", async (context) =>
      context.json({
        value: await readJsonBody(context, {
          mediaTypes: ["application/merge-patch+json", "application/json"],
        }),
      }),
    );
    const empty = await application.request("/optional", { method: "POST", body: "" });
    expect(await empty.json()).toEqual({ value: {} });
    const untypedBody = await application.request("/optional", { method: "POST", body: "{}" });
    expect(untypedBody.status).toBe(415);
    const merge = await application.request("/merge", {
      method: "PATCH",
      body: '{"a":null}',
      headers: { "content-type": "application/merge-patch+json" },
    });
    expect(await merge.json()).toEqual({ value: { a: null } });
    const plain = await application.request("/merge", {
      method: "PATCH",
      body: "{}",
      headers: { "content-type": "text/plain" },
    });
    expect(plain.status).toBe(415);
    expect(((await plain.json()) as ErrorResponse).error.message).toBe(
      'send the body as JSON with "Content-Type: application/merge-patch+json" or "Content-Type: application/json", not as text/plain',
    );
  });

  it("validates query parameters", async () => {
    const response = await app().application.request("/query?limit=9");
    expect(response.status).toBe(400);
    expect(((await response.json()) as ErrorResponse).error.message).toMatch(/^limit: /);
    const ok = await app().application.request("/query?limit=3");
    expect(await ok.json()).toEqual({ limit: 3 });
  });

  it("keeps an HttpError's status and code", async () => {
    const response = await app().application.request("/teapot");
    expect(response.status).toBe(409);
    expect(await response.json()).toEqual({
      error: { code: "conflict", message: "already exited" },
    });
  });

  it("turns an unexpected error into a 500 that does not echo the error text", async () => {
    const { application, unexpected } = app();
    const response = await application.request("/crash");
    expect(response.status).toBe(500);
    const text = await response.text();
    expect(text).not.toContain("secret-token-value");
    expect(JSON.parse(text).error.code).toBe("internal");
    expect(unexpected).toHaveLength(1);
  });

  it("answers unknown routes with 404 in the same shape", async () => {
    const response = await app().application.request("/nope");
    expect(response.status).toBe(404);
    expect(((await response.json()) as ErrorResponse).error.code).toBe("not_found");
  });
});

describe("unusable input", () => {
  const post = (path: string, body: string) =>
    app().application.request(path, {
      method: "POST",
      body,
      headers: { "content-type": "application/json" },
    });
  const errorOf = async (response: Response) => ((await response.json()) as ErrorResponse).error;

  it("refuses a NUL in a body string with 400 naming the field", async () => {
    const response = await post("/body", JSON.stringify({ name: "a\u0000b" }));
    expect(response.status).toBe(400);
    const error = await errorOf(response);
    expect(error.code).toBe("invalid_request");
    expect(error.message).toMatch(/^name: contains a NUL character \(U\+0000\)/);
  });

  it("names the path of a NUL nested in arrays and objects", async () => {
    const response = await post(
      "/tags",
      JSON.stringify({ tags: [{ label: "ok" }, { label: "\u0000" }] }),
    );
    expect(response.status).toBe(400);
    expect((await errorOf(response)).message).toMatch(/^tags\.1\.label: contains a NUL/);
  });

  it("refuses a NUL in an object key, and in a body no schema validates", async () => {
    const response = await post("/any", '{"a\\u0000": 1}');
    expect(response.status).toBe(400);
    expect((await errorOf(response)).message).toMatch(/^body: a key that contains a NUL/);
  });

  it("refuses a lone surrogate, which UTF-8 cannot encode, but keeps a surrogate pair", async () => {
    const lone = await post("/body", '{"name": "a\\ud800b"}');
    expect(lone.status).toBe(400);
    expect((await errorOf(lone)).message).toMatch(/^name: contains a lone surrogate \(U\+D800\)/);
    const trailing = await post("/body", '{"name": "a\\udc00"}');
    expect(trailing.status).toBe(400);
    const pair = await post("/body", '{"name": "\\ud83d\\ude00"}');
    expect(pair.status).toBe(200);
    expect(await pair.json()).toEqual({ name: "😀" });
  });

  it("refuses a NUL in a query parameter or a path parameter", async () => {
    const query = await app().application.request("/query?limit=%00");
    expect(query.status).toBe(400);
    expect((await errorOf(query)).message).toMatch(/^limit: contains a NUL/);
    const path = await app().application.request("/items/a%00b");
    expect(path.status).toBe(400);
    expect((await errorOf(path)).message).toMatch(/^item_id: contains a NUL/);
  });

  it("answers a 50,000-deep body with 400 invalid_json instead of overflowing the stack", async () => {
    const deep = `${"[".repeat(50_000)}${"]".repeat(50_000)}`;
    for (const path of ["/any", "/body"]) {
      const response = await post(path, deep);
      expect(response.status).toBe(400);
      const error = await errorOf(response);
      expect(error.code).toBe("invalid_json");
      expect(error.message).toContain(`deeper than ${MAX_JSON_DEPTH} levels`);
    }
    const atLimit = `${"[".repeat(MAX_JSON_DEPTH)}${"]".repeat(MAX_JSON_DEPTH)}`;
    expect((await post("/any", atLimit)).status).toBe(200);
  });

  it("counts nesting without counting brackets inside strings", () => {
    expect(jsonDepth('{"a": [1, {"b": "[[[{{{\\"]]]"}]}')).toBe(3);
    expect(jsonDepth('"just a string"')).toBe(0);
  });
});

describe("describeZodError", () => {
  const messageFor = (schema: z.ZodType, value: unknown) => {
    const result = schema.safeParse(value);
    if (result.success) throw new Error("expected the value to be invalid");
    return describeZodError(result.error);
  };

  it("gives a bad record key's own message, not zod's generic one", () => {
    const env = z.record(z.string().regex(/^[A-Z]+$/, "must be upper case"), z.string());
    const schema = z.strictObject({ env: env.optional() });
    expect(messageFor(schema, { env: { lower: "x", UPPER: 1 } })).toBe(
      "env.lower: must be upper case; env.UPPER: Invalid input: expected string, received number",
    );
  });

  it("names the problems of the one union alternative the input comes close to", () => {
    const schema = z.object({
      step: z.union([z.string(), z.strictObject({ run: z.string().min(1) })]),
    });
    expect(messageFor(schema, { step: { run: "" } })).toBe(
      "step.run: Too small: expected string to have >=1 characters",
    );
  });

  it("lists the expected types when the input matches no union alternative's type", () => {
    const schema = z.object({ step: z.union([z.string(), z.number()]) });
    expect(messageFor(schema, { step: true })).toBe(
      "step: Invalid input: expected string or number",
    );
  });

  it("describes each union alternative the input comes close to", () => {
    const schema = z.object({
      step: z.union([z.object({ run: z.string() }), z.object({ uses: z.string() })]),
    });
    expect(messageFor(schema, { step: {} })).toBe(
      "step: Invalid input, fitting none of: (run: Invalid input: expected string, received undefined) or (uses: Invalid input: expected string, received undefined)",
    );
  });
});
