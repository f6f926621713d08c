import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { installErrorHandling } from "./error-handling.ts";
import { HttpError } from "./http-error.ts";
import { NO_CONTENT_SECURITY_POLICY, securityHeaders } from "./security-headers.ts";

function app(): Hono {
  const application = new Hono();
  installErrorHandling(application);
  application.use(securityHeaders(NO_CONTENT_SECURITY_POLICY));
  application.get("/json", (context) => context.json({ ok: true }));
  application.get("/own-policy", (context) => {
    context.header("Content-Security-Policy", "default-src 'self'; style-src 'nonce-abc'");
    return context.html("<p>page</p>");
  });
  application.get("/refused", () => {
    throw new HttpError(403, "origin_not_allowed", "no");
  });
  // As a proxy answers: a Response straight from fetch, whose headers cannot be changed.
  application.get("/forwarded", () => {
    const response = Response.json({ forwarded: true });
    Object.defineProperty(response, "headers", {
      value: new Proxy(response.headers, {
        get(target, property) {
          if (property === "set") {
            return () => {
              throw new TypeError("immutable");
            };
          }
          const value = Reflect.get(target, property, target);
          return typeof value === "function" ? value.bind(target) : value;
        },
      }),
    });
    return response;
  });
  return application;
}

describe("securityHeaders", () => {
  it("puts the policy, nosniff, no-referrer and the framing and isolation headers on every answer", async () => {
    for (const path of ["/json", "/refused", "/forwarded", "/missing"]) {
      const response = await app().request(path);
      expect(response.headers.get("content-security-policy"), path).toBe(
        NO_CONTENT_SECURITY_POLICY,
      );
      expect(response.headers.get("x-content-type-options")).toBe("nosniff");
      expect(response.headers.get("referrer-policy")).toBe("no-referrer");
      expect(response.headers.get("x-frame-options")).toBe("DENY");
      expect(response.headers.get("cross-origin-resource-policy")).toBe("same-origin");
      expect(response.headers.get("cross-origin-opener-policy")).toBe("same-origin");
    }
    expect(await (await app().request("/forwarded")).json()).toEqual({ forwarded: true });
  });

  it("leaves an answer's own policy (a page's, with its nonce) as it is", async () => {
    const response = await app().request("/own-policy");
    expect(response.headers.get("content-security-policy")).toBe(
      "default-src 'self'; style-src 'nonce-abc'",
    );
    expect(response.headers.get("x-content-type-options")).toBe("nosniff");
  });
});
