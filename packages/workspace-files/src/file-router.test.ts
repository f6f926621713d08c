import { readFileSync } from "node:fs";
import { httpStatusOf, installErrorHandling } from "@deckhand/http-kit";
import { type ErrorCode, ErrorCodeSchema, type ErrorResponse, WirePath } from "@deckhand/wire";
import { Hono } from "hono";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type TemporaryTree, temporaryTree } from "../test/support.ts";
import { createFileRouter } from "./file-router.ts";
import { WorkspaceFiles } from "./workspace-files.ts";
import { WorkspaceFilesError } from "./workspace-files-error.ts";

let tree: TemporaryTree;
let app: Hono;
const unexpected: unknown[] = [];

beforeEach(() => {
  tree = temporaryTree();
  unexpected.length = 0;
  app = new Hono();
  installErrorHandling(app, { onUnexpectedError: (error) => unexpected.push(error) });
  app.route(WirePath.files, createFileRouter(new WorkspaceFiles({ root: tree.root })));
});
afterEach(() => tree.remove());

async function post(route: string, body: unknown) {
  const response = await app.request(`${WirePath.files}/${route}`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

/** What the router answers when the file API fails with a WorkspaceFilesError of this code. */
async function answerTo(code: ErrorCode) {
  class FailingFiles extends WorkspaceFiles {
    override async read(): Promise<never> {
      throw new WorkspaceFilesError(code, `failing with ${code}`);
    }
  }
  const failing = new Hono();
  installErrorHandling(failing);
  failing.route(WirePath.files, createFileRouter(new FailingFiles({ root: tree.root })));
  const response = await failing.request(`${WirePath.files}/read`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ path: "any.txt" }),
  });
  return { status: response.status, code: ((await response.json()) as ErrorResponse).error.code };
}

async function errorOf(route: string, body: unknown) {
  const { status, body: answer } = await post(route, body);
  return {
    status,
    code: (answer as ErrorResponse).error.code,
    message: (answer as ErrorResponse).error.message,
  };
}

describe("file router", () => {
  it("serves read, write and edit", async () => {
    expect((await post("write", { path: "a.txt", content: "one\n" })).body).toMatchObject({
      created: true,
      bytes_written: 4,
    });
    expect(
      (
        await post("edit", {
          files: [{ path: "a.txt", edits: [{ search: "one", replace: "two" }] }],
        })
      ).status,
    ).toBe(200);
    const read = await post("read", { path: "a.txt" });
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({ content: "two\n", total_lines: 1 });
  });

  it("serves delete, answering deleted: false for a missing file and 400 not_a_file for a directory", async () => {
    const target = tree.file("dir/a.txt", "a");
    expect(await post("delete", { path: "dir/a.txt" })).toEqual({
      status: 200,
      body: { path: target, deleted: true },
    });
    expect((await post("delete", { path: "dir/a.txt" })).body).toEqual({
      path: target,
      deleted: false,
    });
    expect(await errorOf("delete", { path: "dir" })).toMatchObject({
      status: 400,
      code: "not_a_file",
    });
    expect(await errorOf("delete", { path: "../outside/secret.txt" })).toMatchObject({
      status: 403,
      code: "path_outside_root",
    });
    expect(await errorOf("delete", { path: "a.txt", recursive: true })).toMatchObject({
      status: 400,
      code: "invalid_request",
    });
  });

  it("narrows the guard to the request's root", async () => {
    tree.file("wt/a.txt", "a");
    tree.file("sibling/secret.txt", "s");
    tree.link("wt/sib", "../sibling");
    expect((await post("read", { root: "wt", path: "a.txt" })).status).toBe(200);
    for (const [route, body] of [
      ["read", { root: "wt", path: "sib/secret.txt" }],
      ["write", { root: "wt", path: "sib/new.txt", content: "x" }],
      [
        "edit",
        { root: "wt", files: [{ path: "sib/secret.txt", edits: [{ search: "s", replace: "t" }] }] },
      ],
      ["delete", { root: "wt", path: "sib/secret.txt" }],
    ] as const) {
      expect(await errorOf(route, body), route).toMatchObject({
        status: 403,
        code: "path_outside_root",
      });
    }
    expect(await errorOf("read", { root: "missing", path: "a.txt" })).toMatchObject({
      status: 400,
      code: "invalid_request",
    });
    expect(readFileSync(`${tree.root}/sibling/secret.txt`, "utf8")).toBe("s");
  });

  it("answers 400 invalid_json for a body that is not JSON", async () => {
    expect(await errorOf("read", "{")).toMatchObject({ status: 400, code: "invalid_json" });
  });

  it("answers 400 invalid_request for a body that fails the schema", async () => {
    const failure = await errorOf("read", { path: "a.txt", offset: 0, extra: true });
    expect(failure).toMatchObject({ status: 400, code: "invalid_request" });
    expect(failure.message).toContain("offset");
    expect((await errorOf("write", { path: "a\0b", content: "" })).code).toBe("invalid_request");
    expect((await errorOf("edit", { files: [] })).code).toBe("invalid_request");
  });

  it("answers 403 path_outside_root", async () => {
    expect(await errorOf("read", { path: "../outside/secret.txt" })).toMatchObject({
      status: 403,
      code: "path_outside_root",
    });
    expect(await errorOf("write", { path: `${tree.root}-evil/x`, content: "x" })).toMatchObject({
      status: 403,
      code: "path_outside_root",
    });
    expect(readFileSync(`${tree.root}-evil/x`, "utf8")).toBe("evil\n");
  });

  it("answers 404 file_not_found", async () => {
    expect(await errorOf("read", { path: "missing.txt" })).toMatchObject({
      status: 404,
      code: "file_not_found",
    });
    expect(
      await errorOf("edit", {
        files: [{ path: "missing.txt", edits: [{ search: "a", replace: "b" }] }],
      }),
    ).toMatchObject({
      status: 404,
      code: "file_not_found",
    });
  });

  it("answers 400 not_a_file for a directory", async () => {
    tree.file("dir/inner.txt", "x");
    expect(await errorOf("read", { path: "dir" })).toMatchObject({
      status: 400,
      code: "not_a_file",
    });
  });

  it("answers 415 binary_file", async () => {
    tree.file("image.bin", "\0");
    expect(await errorOf("read", { path: "image.bin" })).toMatchObject({
      status: 415,
      code: "binary_file",
    });
  });

  it("answers 422 edit_failed", async () => {
    tree.file("a.txt", "a a");
    expect(
      await errorOf("edit", { files: [{ path: "a.txt", edits: [{ search: "a", replace: "b" }] }] }),
    ).toMatchObject({
      status: 422,
      code: "edit_failed",
    });
  });

  it("leaves unexpected errors to the app's handler, which logs them and answers 500", async () => {
    const failing = new Hono();
    installErrorHandling(failing, { onUnexpectedError: (error) => unexpected.push(error) });
    const broken = new WorkspaceFiles({ root: tree.root });
    broken.read = async () => {
      throw new Error("boom with private detail");
    };
    failing.route(WirePath.files, createFileRouter(broken));
    const response = await failing.request(`${WirePath.files}/read`, {
      method: "POST",
      body: JSON.stringify({ path: "a" }),
      headers: { "content-type": "application/json" },
    });
    expect(response.status).toBe(500);
    expect(await response.text()).not.toContain("private detail");
    expect(unexpected).toHaveLength(1);
  });

  it("maps every file error code to its documented status", async () => {
    const documented: Record<string, number> = {
      invalid_json: 400,
      invalid_request: 400,
      path_outside_root: 403,
      file_not_found: 404,
      conflict: 409,
      not_a_file: 400,
      binary_file: 415,
      edit_failed: 422,
      internal: 500,
    };
    for (const [code, status] of Object.entries(documented)) {
      expect({ code, status: (await answerTo(code as ErrorCode)).status }).toEqual({
        code,
        status,
      });
    }
  });

  it("answers every wire code a WorkspaceFilesError carries with the status map's status", async () => {
    for (const code of ErrorCodeSchema.options) {
      const { status, code: answered } = await answerTo(code);
      expect({ code: answered, status }).toEqual({ code, status: httpStatusOf(code) });
    }
  });
});
