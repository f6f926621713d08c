import type { ErrorResponse } from "@deckhand/wire";
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { limitBody } from "./body-limit.ts";
import { installErrorHandling } from "./error-handling.ts";

function app(maxBytes: number) {
  const application = new Hono();
  installErrorHandling(application);
  application.use(limitBody({ maxBytes, setting: "maxRequestBodyBytes in config.json" }));
  application.post("/echo", async (context) =>
    context.json({ bytes: (await context.req.text()).length }),
  );
  return application;
}

describe("limitBody", () => {
  it("answers a body whose Content-Length is over the limit with 413 body_too_large, closing the connection", async () => {
    const response = await app(1024).request("/echo", {
      method: "POST",
      body: "x".repeat(1025),
      headers: { "content-length": "1025" },
    });
    expect(response.status).toBe(413);
    expect(response.headers.get("connection")).toBe("close");
    const body = (await response.json()) as ErrorResponse;
    expect(body.error.code).toBe("body_too_large");
    expect(body.error.message).toContain("raise maxRequestBodyBytes in config.json");
  });

  it("stops reading a streamed body once it passes the limit, without waiting for its end", async () => {
    let pulled = 0;
    const endless = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulled++;
        controller.enqueue(new Uint8Array(512));
      },
    });
    const response = await app(4096).request("/echo", {
      method: "POST",
      body: endless,
      // Node's fetch needs half duplex for a streamed request body.
      duplex: "half",
    });
    expect(response.status).toBe(413);
    expect(pulled).toBeLessThan(20);
  });

  it("passes a body at the limit", async () => {
    const response = await app(1024).request("/echo", { method: "POST", body: "x".repeat(1024) });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ bytes: 1024 });
  });
});
