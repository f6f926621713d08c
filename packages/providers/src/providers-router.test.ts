import { httpStatusOf, isHttpStatusOf } from "@deckhand/http-kit";
import {
  type ErrorCode,
  ErrorResponseSchema,
  ProvidersConfigResponseSchema,
  ProvidersSnapshotSchema,
  WirePath,
} from "@deckhand/wire";
import { Hono } from "hono";
import { afterEach, describe, expect, it } from "vitest";
import { cleanUp, createTestService, scriptedProvider, writeConfig } from "../test/support.ts";
import { ProvidersError, type ProvidersErrorCode } from "./providers-error.ts";
import { createProvidersRouter } from "./providers-router.ts";

afterEach(cleanUp);

const base = `${WirePath.serverApi}/providers`;

/** The router mounted where the server mounts it. */
function setUp() {
  const service = createTestService();
  const app = new Hono();
  app.route(base, createProvidersRouter(service));
  return { service, app };
}

function patch(app: Hono, body: string, headers: Record<string, string> = {}) {
  return app.request(`${base}/config`, {
    method: "PATCH",
    body,
    headers: { "Content-Type": "application/merge-patch+json", ...headers },
  });
}

async function errorOf(response: Response) {
  return ErrorResponseSchema.parse(await response.json()).error;
}

describe("the providers router", () => {
  it("serves the snapshot", async () => {
    const { service, app } = setUp();
    writeConfig(service.configPath, { providers: { scripted: scriptedProvider("normal") } });
    const response = await app.request(`${base}/snapshot`);
    expect(response.status).toBe(200);
    const snapshot = ProvidersSnapshotSchema.parse(await response.json());
    expect(snapshot.providers.find((provider) => provider.id === "scripted")!.status).toBe("ready");
  });

  it("serves a project's snapshot, and refuses a malformed or unknown project id", async () => {
    const { app } = setUp();
    const malformed = await app.request(`${base}/snapshot?project_id=not-a-uuid`);
    expect(malformed.status).toBe(400);
    expect(await errorOf(malformed)).toMatchObject({
      code: "invalid_request",
      message: expect.stringContaining("project_id"),
    });
    const unknown = await app.request(
      `${base}/snapshot?project_id=00000000-0000-4000-8000-000000000000`,
    );
    expect(unknown.status).toBe(404);
    expect(await errorOf(unknown)).toMatchObject({ code: "not_found" });
    expect((await app.request(`${base}/snapshot?bogus=1`)).status).toBe(400);
  });

  it("serves the config with its ETag and patches it with If-Match; a stale ETag is 412", async () => {
    const { service, app } = setUp();
    writeConfig(service.configPath, { keep: true });
    const read = await app.request(`${base}/config`);
    const config = ProvidersConfigResponseSchema.parse(await read.json());
    expect(read.headers.get("ETag")).toBe(config.etag);
    expect(config.config).toEqual({ keep: true });

    const patched = await patch(app, JSON.stringify({ providers: { codex: { enabled: false } } }), {
      "If-Match": config.etag,
    });
    expect(patched.status).toBe(200);
    const body = ProvidersConfigResponseSchema.parse(await patched.json());
    expect(body.config).toEqual({ keep: true, providers: { codex: { enabled: false } } });
    expect(patched.headers.get("ETag")).toBe(body.etag);
    expect(body.etag).not.toBe(config.etag);

    const stale = await patch(app, JSON.stringify({ providers: { codex: { enabled: true } } }), {
      "If-Match": config.etag,
    });
    expect(stale.status).toBe(412);
    expect(await errorOf(stale)).toMatchObject({ code: "conflict" });

    // If-Match compares strongly: the same tag marked weak does not match, a list may hold it.
    const current = ProvidersConfigResponseSchema.parse(
      await (await app.request(`${base}/config`)).json(),
    );
    const weak = await patch(app, JSON.stringify({ providers: { codex: { enabled: true } } }), {
      "If-Match": `W/${current.etag}`,
    });
    expect(weak.status).toBe(412);
    const listed = await patch(app, JSON.stringify({ providers: { claude: { enabled: false } } }), {
      "If-Match": `"someone-else", ${current.etag}`,
    });
    expect(listed.status).toBe(200);
    const anyVersion = await patch(app, JSON.stringify({ providers: { claude: null } }), {
      "If-Match": "*",
    });
    expect(anyVersion.status).toBe(200);

    const plainJson = await patch(app, JSON.stringify({ providers: { codex: null } }), {
      "Content-Type": "application/json; charset=utf-8",
    });
    expect(plainJson.status).toBe(200);
    expect(ProvidersConfigResponseSchema.parse(await plainJson.json()).config).toEqual({
      keep: true,
      providers: {},
    });
  });

  it("refuses patches that are not JSON objects, of another type, or that break the config", async () => {
    const { app } = setUp();
    expect((await patch(app, "{nope")).status).toBe(400);
    const array = await patch(app, "[1]");
    expect(array.status).toBe(400);
    expect((await errorOf(array)).message).toContain("JSON merge patch");
    const text = await patch(app, "{}", { "Content-Type": "text/plain" });
    expect(text.status).toBe(415);
    expect(await errorOf(text)).toMatchObject({
      code: "unsupported_media_type",
      message: expect.stringContaining("application/merge-patch+json"),
    });
    const untyped = await app.request(`${base}/config`, { method: "PATCH", body: "{}" });
    expect(untyped.status).toBe(415);
    expect((await errorOf(untyped)).message).toContain("application/merge-patch+json");
    const invalid = await patch(app, JSON.stringify({ providers: { codex: { enabled: "no" } } }));
    expect(invalid.status).toBe(400);
    expect(await errorOf(invalid)).toMatchObject({
      code: "invalid_request",
      message: expect.stringContaining("providers.codex.enabled"),
    });
  });

  it("refreshes with or without a body, and names unknown providers and fields", async () => {
    const { app } = setUp();
    const empty = await app.request(`${base}/refresh`, { method: "POST" });
    expect(empty.status).toBe(200);
    ProvidersSnapshotSchema.parse(await empty.json());
    const forced = await app.request(`${base}/refresh`, {
      method: "POST",
      body: JSON.stringify({ ids: ["codex"], force: true }),
      headers: { "Content-Type": "application/json" },
    });
    expect(forced.status).toBe(200);
    const unknown = await app.request(`${base}/refresh`, {
      method: "POST",
      body: JSON.stringify({ ids: ["nope"] }),
      headers: { "Content-Type": "application/json" },
    });
    expect(unknown.status).toBe(404);
    expect(await errorOf(unknown)).toMatchObject({ code: "not_found" });
    const bogus = await app.request(`${base}/refresh`, {
      method: "POST",
      body: JSON.stringify({ id: "codex" }),
      headers: { "Content-Type": "application/json" },
    });
    expect(bogus.status).toBe(400);
    // A body a page could send across origins without asking (text/plain) is not read.
    const simple = await app.request(`${base}/refresh`, {
      method: "POST",
      body: JSON.stringify({ ids: ["codex"], force: true }),
      headers: { "Content-Type": "text/plain" },
    });
    expect(simple.status).toBe(415);
    expect(await errorOf(simple)).toMatchObject({ code: "unsupported_media_type" });
  });

  it("answers a diagnostic as plain text, and 404 for an unknown provider", async () => {
    const { service, app } = setUp();
    writeConfig(service.configPath, { providers: { crash: scriptedProvider("crash") } });
    await app.request(`${base}/snapshot`);
    const response = await app.request(`${base}/crash/diagnostic`);
    expect(response.status).toBe(200);
    expect(response.headers.get("Content-Type")).toBe("text/plain; charset=utf-8");
    const text = await response.text();
    expect(text).toContain("provider: crash (Scripted crash; acp; custom)");
    expect(text).toContain(`resolved: ${process.execPath}`);
    expect(text).toContain("last probe error: the agent exited (code 3) during initialize");
    expect((await app.request(`${base}/nope/diagnostic`)).status).toBe(404);
    expect((await app.request(`${base}/NOPE!/diagnostic`)).status).toBe(404);
  });

  it("answers each ProvidersError with its wire code and the status map's status for it", async () => {
    const expected: Record<ProvidersErrorCode, [number, ErrorCode]> = {
      unknown_provider: [404, "not_found"],
      unknown_project: [404, "not_found"],
      provider_disabled: [409, "conflict"],
      provider_not_installed: [409, "conflict"],
      provider_unavailable: [409, "conflict"],
      stale_config: [412, "conflict"],
      invalid_patch: [400, "invalid_request"],
      unreadable_config: [409, "conflict"],
      config_write_failed: [500, "internal"],
    };
    const { service, app } = setUp();
    for (const [providersCode, [status, code]] of Object.entries(expected)) {
      service.snapshot = async () => {
        throw new ProvidersError(providersCode as ProvidersErrorCode, `failing: ${providersCode}`);
      };
      const response = await app.request(`${base}/snapshot`);
      expect({ providersCode, status: response.status, error: await errorOf(response) }).toEqual({
        providersCode,
        status,
        error: { code, message: `failing: ${providersCode}` },
      });
      // The status is one the status map allows for the wire code: its own, or 412 for If-Match.
      expect(isHttpStatusOf(code, status)).toBe(true);
      if (providersCode !== "stale_config") expect(status).toBe(httpStatusOf(code));
    }
  });
});
