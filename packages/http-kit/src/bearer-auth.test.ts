import { WireHeader } from "@deckhand/wire";
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { bearerAuth, bearerTokenOf, tokenMatches } from "./bearer-auth.ts";
import { installErrorHandling } from "./error-handling.ts";

function app(appliesTo?: (path: string) => boolean) {
  const application = new Hono();
  installErrorHandling(application);
  application.use(
    bearerAuth({
      token: "right-token",
      tokenName: "admin token",
      envName: "THE_ENV",
      ...(appliesTo ? { appliesTo } : {}),
    }),
  );
  application.get("/secured/x", (context) => context.text("ok"));
  application.get("/open", (context) => context.text("open"));
  return application;
}

describe("bearer auth", () => {
  it("compares tokens exactly, whatever their lengths", () => {
    expect(tokenMatches("secret", "secret")).toBe(true);
    expect(tokenMatches("secret", "secreT")).toBe(false);
    expect(tokenMatches("secret", "secret-longer")).toBe(false);
    expect(tokenMatches("secret", "")).toBe(false);
  });

  it("reads only Bearer credentials", () => {
    expect(bearerTokenOf("Bearer abc ")).toBe("abc");
    expect(bearerTokenOf("bearer abc")).toBe("abc");
    expect(bearerTokenOf("abc")).toBeNull();
    expect(bearerTokenOf(undefined)).toBeNull();
  });

  it("answers 401 with WWW-Authenticate and a message naming the env, never the sent value", async () => {
    const response = await app().request("/secured/x", {
      headers: { [WireHeader.authorization]: "Bearer wrong-sent-value" },
    });
    expect(response.status).toBe(401);
    expect(response.headers.get("www-authenticate")).toBe("Bearer");
    const text = await response.text();
    expect(JSON.parse(text)).toEqual({
      error: {
        code: "unauthorized",
        message: `missing or wrong admin token; send "${WireHeader.authorization}: Bearer <token>" with the token from THE_ENV`,
      },
    });
    expect(text).not.toContain("wrong-sent-value");
  });

  it("lets the right token through and leaves paths it does not apply to open", async () => {
    const ok = await app().request("/secured/x", {
      headers: { [WireHeader.authorization]: "Bearer right-token" },
    });
    expect(await ok.text()).toBe("ok");
    const scoped = app((path) => path.startsWith("/secured/"));
    expect((await scoped.request("/open")).status).toBe(200);
    expect((await scoped.request("/secured/x")).status).toBe(401);
  });
});
