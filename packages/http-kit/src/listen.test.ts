import { connect } from "node:net";
import { Hono } from "hono";
import { afterEach, describe, expect, it } from "vitest";
import { installErrorHandling } from "./error-handling.ts";
import { type Listening, listen, MAX_HEADER_BYTES } from "./listen.ts";

let listening: Listening | null = null;

afterEach(async () => {
  const server = listening?.server;
  listening = null;
  if (server) {
    if ("closeAllConnections" in server) server.closeAllConnections();
    await new Promise<void>((resolveClose) => server.close(() => resolveClose()));
  }
});

async function serveApp(): Promise<Listening> {
  const app = new Hono();
  installErrorHandling(app);
  app.get("/echo", (context) => context.json({ length: context.req.url.length }));
  listening = await listen(app.fetch, { host: "127.0.0.1", port: 0 }, (error) => error);
  return listening;
}

describe("listen", () => {
  it("answers a request line over the header limit with 414 uri_too_long instead of a reset", async () => {
    const { url } = await serveApp();
    const response = await fetch(`${url}/echo?q=${"a".repeat(MAX_HEADER_BYTES * 32)}`);
    expect(response.status).toBe(414);
    const body = (await response.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe("uri_too_long");
    expect(body.error.message).toContain("request body");
  });

  it("answers headers over the limit with 431 headers_too_large", async () => {
    const { url } = await serveApp();
    const response = await fetch(`${url}/echo`, {
      headers: { "x-big": "b".repeat(MAX_HEADER_BYTES + 1024) },
    });
    expect(response.status).toBe(431);
    const body = (await response.json()) as { error: { code: string } };
    expect(body.error.code).toBe("headers_too_large");
  });

  it("still serves a long URL under the limit", async () => {
    const { url } = await serveApp();
    const response = await fetch(`${url}/echo?q=${"a".repeat(8 * 1024)}`);
    expect(response.status).toBe(200);
  });

  it("answers a request Node cannot parse with 400 in the error shape", async () => {
    const { port } = await serveApp();
    const answer = await new Promise<string>((resolveAnswer, reject) => {
      const socket = connect(port, "127.0.0.1", () => {
        socket.write("GET /echo HTTP/1.1\r\nHost: x\r\nNot a header\r\n\r\n");
      });
      let received = "";
      socket.on("data", (chunk) => {
        received += chunk.toString("utf8");
      });
      socket.on("close", () => resolveAnswer(received));
      socket.on("error", reject);
    });
    expect(answer).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(answer).toContain('"code":"invalid_request"');
    expect(answer).toContain("malformed HTTP request");
  });
});
