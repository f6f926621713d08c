import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { type Project, ServerPath } from "@deckhand/wire";
import { afterEach, describe, expect, it } from "vitest";
import { nodeHttpTransport } from "./node-http-transport.ts";
import { ServerApiError } from "./server-api-error.ts";
import { createServerClient } from "./server-client.ts";

interface Received {
  method: string;
  url: string;
  headers: IncomingMessage["headers"];
  body: string;
}

let server: Server | undefined;
afterEach(async () => {
  await new Promise((closed) => server?.close(closed) ?? closed(undefined));
  server = undefined;
});

/** A server on a free loopback port that records each request and answers with `answer`. */
async function serve(answer: { status: number; body: string; contentType?: string }) {
  const received: Received[] = [];
  server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      received.push({
        method: request.method ?? "",
        url: request.url ?? "",
        headers: request.headers,
        body: Buffer.concat(chunks).toString("utf8"),
      });
      response.writeHead(answer.status, {
        "content-type": answer.contentType ?? "application/json",
      });
      response.end(answer.body);
    });
  });
  await new Promise<void>((listening) => server!.listen(0, "127.0.0.1", listening));
  const { port } = server.address() as AddressInfo;
  return { baseUrl: `http://127.0.0.1:${port}`, received };
}

const project: Project = {
  id: "00000000-0000-4000-8000-000000000001",
  name: "demo",
  repository_path: "/srv/demo",
  repository_url: null,
  default_branch: "main",
  created_at: "2025-01-01T00:00:00.000Z",
};

describe("the server client over node:http", () => {
  it("sends the method, path, token and labelled JSON body, says when the request is out, and checks the answer", async () => {
    const { baseUrl, received } = await serve({ status: 201, body: JSON.stringify(project) });
    const client = createServerClient({ baseUrl, token: "secret", transport: nodeHttpTransport });
    let sentBeforeAnswer = false;
    const answer = await client.createProject(
      { body: { repository_path: "/srv/demo" } },
      {
        headers: { "X-Extra": "yes" },
        onSent: () => {
          sentBeforeAnswer = true;
        },
      },
    );
    expect(answer).toEqual(project);
    expect(sentBeforeAnswer).toBe(true);
    expect(received).toHaveLength(1);
    expect(received[0]).toMatchObject({
      method: "POST",
      url: ServerPath.projects,
      body: JSON.stringify({ repository_path: "/srv/demo" }),
    });
    expect(received[0]!.headers).toMatchObject({
      authorization: "Bearer secret",
      "content-type": "application/json",
      "x-extra": "yes",
      connection: "close",
    });
  });

  it("reports the server's error answer with its code and status", async () => {
    const { baseUrl } = await serve({
      status: 404,
      body: JSON.stringify({ error: { code: "not_found", message: "no project with that id" } }),
    });
    const client = createServerClient({ baseUrl, transport: nodeHttpTransport });
    const error = await client
      .getProject({ params: { project_id: project.id } })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ServerApiError);
    expect(error).toMatchObject({ status: 404, code: "not_found" });
  });

  it("refuses an answer its route's schema does not read", async () => {
    const { baseUrl } = await serve({ status: 200, body: JSON.stringify({ name: 7 }) });
    const client = createServerClient({ baseUrl, transport: nodeHttpTransport });
    const error = await client
      .getProject({ params: { project_id: project.id } })
      .catch((caught: unknown) => caught);
    expect(error).toMatchObject({ code: "unexpected_answer" });
  });

  it("says a server that is not listening is unreachable, with the system's reason", async () => {
    const { baseUrl } = await serve({ status: 200, body: "{}" });
    await new Promise((closed) => server!.close(closed));
    server = undefined;
    const client = createServerClient({ baseUrl, transport: nodeHttpTransport });
    const error = await client.getHealth().catch((caught: unknown) => caught);
    expect(error).toMatchObject({ status: 0, code: "unreachable" });
    expect((error as Error).message).toContain("ECONNREFUSED");
  });

  it("rejects with the abort when the call's signal aborts", async () => {
    server = createServer(() => {
      // Never answers: the call ends by its signal only.
    });
    await new Promise<void>((listening) => server!.listen(0, "127.0.0.1", listening));
    const { port } = server.address() as AddressInfo;
    const client = createServerClient({
      baseUrl: `http://127.0.0.1:${port}`,
      transport: nodeHttpTransport,
    });
    const abort = new AbortController();
    const call = client.getHealth(undefined, {
      signal: abort.signal,
      onSent: () => abort.abort(),
    });
    await expect(call).rejects.toMatchObject({ name: "AbortError" });
    server.closeAllConnections();
  });
});
