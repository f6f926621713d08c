import type { AddressInfo } from "node:net";
import { installErrorHandling } from "@deckhand/http-kit";
import { WireHeader, WirePath } from "@deckhand/wire";
import { serve } from "@hono/node-server";
import { Hono } from "hono";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type TemporaryTree, temporaryTree } from "../test/support.ts";
import { FileClient, FileClientError } from "./file-client.ts";
import { createFileRouter } from "./file-router.ts";
import { WorkspaceFiles } from "./workspace-files.ts";
import { WorkspaceFilesError } from "./workspace-files-error.ts";

const TOKEN = "file-client-test-token";

describe("FileClient against the router over HTTP", () => {
  let tree: TemporaryTree;
  let server: ReturnType<typeof serve>;
  let baseUrl: string;
  const seenAuthorization: (string | undefined)[] = [];

  beforeAll(async () => {
    tree = temporaryTree();
    const app = new Hono();
    installErrorHandling(app);
    app.use(async (context, next) => {
      seenAuthorization.push(context.req.header(WireHeader.authorization));
      await next();
    });
    app.route(WirePath.files, createFileRouter(new WorkspaceFiles({ root: tree.root })));
    server = await new Promise((resolve) => {
      const instance = serve({ fetch: app.fetch, hostname: "127.0.0.1", port: 0 }, () =>
        resolve(instance),
      );
    });
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  });

  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    tree.remove();
  });

  it("writes, edits and reads, sending the bearer token", async () => {
    const client = new FileClient({ baseUrl, token: TOKEN });
    expect(await client.write({ path: "notes/todo.md", content: "- one\n" })).toMatchObject({
      created: true,
    });
    expect(
      await client.edit({
        files: [{ path: "notes/todo.md", edits: [{ search: "one", replace: "two" }] }],
      }),
    ).toEqual({
      files: [{ path: `${tree.root}/notes/todo.md`, edits_applied: 1 }],
    });
    expect(await client.read({ path: "notes/todo.md" })).toMatchObject({
      content: "- two\n",
      total_lines: 1,
    });
    expect(seenAuthorization.at(-1)).toBe(`Bearer ${TOKEN}`);
  });

  it("deletes, passing root along", async () => {
    const client = new FileClient({ baseUrl, token: TOKEN });
    tree.file("wt/gone.txt", "x");
    expect(await client.delete({ root: "wt", path: "gone.txt" })).toEqual({
      path: `${tree.root}/wt/gone.txt`,
      deleted: true,
    });
    expect(await client.delete({ path: "wt/gone.txt" })).toEqual({
      path: `${tree.root}/wt/gone.txt`,
      deleted: false,
    });
    const refused = await client.delete({ root: "wt", path: "../outside.txt" }).catch((e) => e);
    expect(refused).toBeInstanceOf(FileClientError);
    expect(refused).toMatchObject({ status: 403, code: "path_outside_root" });
  });

  it("sends its root with every request that names none, confining them to that directory", async () => {
    tree.file("scoped-sibling/secret.txt", "sibling secret\n");
    tree.link("scoped/sib", `${tree.root}/scoped-sibling`);
    const client = new FileClient({ baseUrl, token: TOKEN, root: "scoped" });
    expect(await client.write({ path: "a.txt", content: "one\n" })).toMatchObject({
      path: `${tree.root}/scoped/a.txt`,
      created: true,
    });
    expect(
      await client.edit({ files: [{ path: "a.txt", edits: [{ search: "one", replace: "two" }] }] }),
    ).toEqual({ files: [{ path: `${tree.root}/scoped/a.txt`, edits_applied: 1 }] });
    expect(await client.read({ path: "a.txt" })).toMatchObject({ content: "two\n" });
    expect(await client.delete({ path: "a.txt" })).toEqual({
      path: `${tree.root}/scoped/a.txt`,
      deleted: true,
    });

    // A symlink to a sibling directory under the agent's root leads out of the client's root.
    await expect(client.read({ path: "sib/secret.txt" })).rejects.toMatchObject({
      status: 403,
      code: "path_outside_root",
    });
    await expect(client.read({ path: "../scoped-sibling/secret.txt" })).rejects.toMatchObject({
      status: 403,
      code: "path_outside_root",
    });

    // A request's own root wins.
    expect(await client.read({ root: "scoped-sibling", path: "secret.txt" })).toMatchObject({
      content: "sibling secret\n",
    });
  });

  it("sends no Authorization header without a token", async () => {
    await new FileClient({ baseUrl }).write({ path: "x.txt", content: "" });
    expect(seenAuthorization.at(-1)).toBeUndefined();
  });

  it("throws FileClientError with the status, code and message of the answer", async () => {
    const client = new FileClient({ baseUrl, token: TOKEN });
    const error = await client
      .read({ path: "../outside/secret.txt" })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(FileClientError);
    expect(error).toBeInstanceOf(WorkspaceFilesError);
    expect(error).toMatchObject({ status: 403, code: "path_outside_root" });
    expect((error as Error).message).toContain("outside the workspace root");
    await expect(client.read({ path: "missing.txt" })).rejects.toMatchObject({
      status: 404,
      code: "file_not_found",
    });
  });

  it("throws FileClientError when the answer is not a Deckhand error body", async () => {
    const client = new FileClient({
      baseUrl,
      fetch: async () => new Response("<html>bad gateway</html>", { status: 502 }),
    });
    await expect(client.read({ path: "a" })).rejects.toMatchObject({
      status: 502,
      code: "internal",
    });
  });

  it("throws FileClientError with status 0 when the agent cannot be reached", async () => {
    const client = new FileClient({
      baseUrl,
      fetch: async () => {
        throw new TypeError("fetch failed");
      },
    });
    const error = await client.read({ path: "a" }).catch((caught: unknown) => caught);
    expect(error).toMatchObject({ status: 0, code: "internal" });
    expect((error as Error).message).toContain("cannot reach");
  });
});
