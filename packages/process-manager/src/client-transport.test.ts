import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { fetchTransport, nodeTransport, type Transport } from "./client-transport.ts";

const servers: Server[] = [];

afterEach(async () => {
  await Promise.all(
    servers.splice(0).map(
      (server) =>
        new Promise<void>((resolveClose) => {
          server.close(() => resolveClose());
          server.closeAllConnections();
        }),
    ),
  );
});

async function serve(handler: (request: IncomingMessage, response: ServerResponse) => void) {
  const server = createServer(handler);
  servers.push(server);
  await new Promise<void>((resolveListen) => server.listen(0, "127.0.0.1", resolveListen));
  return new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/path?q=1`);
}

/** Answers with what it received, so a test can see exactly what was sent. */
function echo(request: IncomingMessage, response: ServerResponse): void {
  const chunks: Buffer[] = [];
  request.on("data", (chunk: Buffer) => chunks.push(chunk));
  request.on("end", () => {
    response.writeHead(201, { "Content-Type": "application/json" });
    response.end(
      JSON.stringify({
        method: request.method,
        url: request.url,
        header: request.headers["x-test"],
        length: request.headers["content-length"],
        body: Buffer.concat(chunks).toString("utf8"),
      }),
    );
  });
}

describe.each([
  ["node:http", nodeTransport],
  ["fetch", fetchTransport(fetch)],
] as [string, Transport][])("%s transport", (_name, transport) => {
  it("sends the method, path, headers and body and answers the status and text", async () => {
    const url = await serve(echo);
    const body = JSON.stringify({ command: "echo ü" });
    const answer = await transport(url, { method: "POST", headers: { "X-Test": "yes" }, body });
    expect(answer.status).toBe(201);
    expect(JSON.parse(answer.text)).toEqual({
      method: "POST",
      url: "/path?q=1",
      header: "yes",
      length: String(Buffer.byteLength(body)),
      body,
    });
  });

  it("rejects when the connection closes before the whole answer arrived", async () => {
    const url = await serve((_request, response) => {
      response.writeHead(200, { "Content-Length": "100" });
      response.write("partial", () => response.socket?.destroy());
    });
    await expect(transport(url, { method: "GET", headers: {} })).rejects.toThrow();
  });

  it("rejects when its signal aborts", async () => {
    const url = await serve(() => {
      // Never answers.
    });
    const controller = new AbortController();
    const answer = transport(url, { method: "GET", headers: {}, signal: controller.signal });
    controller.abort();
    await expect(answer).rejects.toThrow();
    expect(controller.signal.aborted).toBe(true);
  });
});

describe("node:http transport over a kept-alive connection", () => {
  it("sends a request again on a new connection when a reused one was reset before it was read", async () => {
    const requestsPerSocket = new Map<unknown, number>();
    let reset = 0;
    // The second request on a connection meets it closed, as an idle connection the server
    // timed out just as the client reused it.
    const url = await serve((request, response) => {
      const seen = (requestsPerSocket.get(request.socket) ?? 0) + 1;
      requestsPerSocket.set(request.socket, seen);
      if (seen === 2) {
        reset += 1;
        request.socket.destroy();
        return;
      }
      response.writeHead(200, { "Content-Type": "application/json" });
      response.end(JSON.stringify({ url: request.url }));
    });
    const get = () => nodeTransport(url, { method: "GET", headers: {} });
    expect(await get()).toEqual({ status: 200, text: '{"url":"/path?q=1"}' });
    expect(await get()).toEqual({ status: 200, text: '{"url":"/path?q=1"}' });
    expect(reset).toBe(1);
  });
});
