import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { type ErrorCode, ErrorCodeSchema, type ErrorResponse } from "@deckhand/wire";
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { installErrorHandling } from "./error-handling.ts";
import { ERROR_CODE_HTTP_STATUSES, httpStatusOf, isHttpStatusOf } from "./error-status.ts";
import { HttpError } from "./http-error.ts";

const docsDirectory = join(import.meta.dirname, "../../../docs");

/** Every `| status | code | when |` row of the user docs, with the file it is in. */
function documentedStatuses(): { file: string; status: number; code: string }[] {
  const rows: { file: string; status: number; code: string }[] = [];
  const files = readdirSync(docsDirectory, { recursive: true, encoding: "utf8" }).filter((file) =>
    file.endsWith(".md"),
  );
  for (const file of files) {
    let inTable = false;
    for (const line of readFileSync(join(docsDirectory, file), "utf8").split("\n")) {
      if (/^\|\s*status\s*\|\s*code\s*\|/i.test(line)) inTable = true;
      else if (!line.startsWith("|")) inTable = false;
      const row = inTable ? /^\|\s*(\d{3})\s*\|\s*`([a-z_]+)`\s*\|/.exec(line) : null;
      if (row) rows.push({ file, status: Number(row[1]), code: row[2]! });
    }
  }
  return rows;
}

async function answerOf(error: unknown): Promise<{ status: number; body: ErrorResponse }> {
  const app = new Hono();
  installErrorHandling(app);
  app.get("/", () => {
    throw error;
  });
  const response = await app.request("/");
  return { status: response.status, body: (await response.json()) as ErrorResponse };
}

describe("the status map", () => {
  it("gives every wire error code a status, 4xx for the client's mistakes and 5xx for ours", () => {
    expect(Object.keys(ERROR_CODE_HTTP_STATUSES).sort()).toEqual(
      [...ErrorCodeSchema.options].sort(),
    );
    for (const code of ErrorCodeSchema.options) {
      const status = httpStatusOf(code);
      expect(status).toBe(ERROR_CODE_HTTP_STATUSES[code][0]);
      const expectedClass =
        code === "internal" || code === "upstream_unavailable" ? "server" : "client";
      expect({ code, class: status >= 500 ? "server" : "client" }).toEqual({
        code,
        class: expectedClass,
      });
    }
  });

  it("keeps the statuses the APIs have always answered", () => {
    expect(
      Object.fromEntries(ErrorCodeSchema.options.map((code) => [code, httpStatusOf(code)])),
    ).toEqual({
      invalid_json: 400,
      invalid_request: 400,
      unauthorized: 401,
      not_found: 404,
      conflict: 409,
      too_many_processes: 429,
      rate_limited: 429,
      upstream_unavailable: 502,
      budget_exceeded: 402,
      path_outside_root: 403,
      file_not_found: 404,
      not_a_file: 400,
      edit_failed: 422,
      binary_file: 415,
      body_too_large: 413,
      uri_too_long: 414,
      headers_too_large: 431,
      host_not_allowed: 403,
      origin_not_allowed: 403,
      unsupported_media_type: 415,
      internal: 500,
    });
  });

  it("allows a code only its own status and the precise ones listed for it", () => {
    expect(isHttpStatusOf("conflict", 409)).toBe(true);
    expect(isHttpStatusOf("conflict", 412)).toBe(true);
    expect(isHttpStatusOf("invalid_request", 415)).toBe(false);
    expect(isHttpStatusOf("invalid_request", 426)).toBe(true);
    expect(isHttpStatusOf("conflict", 400)).toBe(false);
    expect(isHttpStatusOf("not_found", 410)).toBe(false);
    expect(isHttpStatusOf("binary_file", 400)).toBe(false);
    // @ts-expect-error: a status the map does not allow for the code does not compile.
    const mismatched = new HttpError(404, "conflict", "a conflict answered as not found");
    expect(isHttpStatusOf(mismatched.code, mismatched.status)).toBe(false);
  });

  it("answers an HttpError with its status and code, for every wire code", async () => {
    for (const code of ErrorCodeSchema.options) {
      const answer = await answerOf(new HttpError(httpStatusOf(code), code, `failing: ${code}`));
      expect({ code, status: answer.status }).toEqual({ code, status: httpStatusOf(code) });
      expect(answer.body.error).toEqual({ code, message: `failing: ${code}` });
    }
  });

  it("answers an HttpError from a second copy of http-kit as its thrower chose, not as a 500", async () => {
    const copy = (await import(
      /* @vite-ignore */ `./http-error.ts?second-copy=${Date.now()}`
    )) as typeof import("./http-error.ts");
    expect(copy.HttpError).not.toBe(HttpError);
    const answer = await answerOf(new copy.HttpError(409, "conflict", "already applied"));
    expect(answer.status).toBe(409);
    expect(answer.body.error).toEqual({ code: "conflict", message: "already applied" });
    expect(HttpError.isInstance(new copy.HttpError(404, "not_found", "gone"))).toBe(true);
  });

  it("matches every status and code the user docs list", () => {
    const rows = documentedStatuses();
    // The server's, the file API's, the process API's and the git watch's tables at least.
    expect(new Set(rows.map((row) => row.file)).size).toBeGreaterThanOrEqual(4);
    for (const row of rows) {
      expect(ErrorCodeSchema.options).toContain(row.code);
      expect({ ...row, allowed: isHttpStatusOf(row.code as ErrorCode, row.status) }).toEqual({
        ...row,
        allowed: true,
      });
    }
  });
});
