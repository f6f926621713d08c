import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { logRequests, type RequestLogEntry } from "./request-log.ts";

describe("request log", () => {
  it("writes method, path, status, duration and the app's extra fields after the answer", async () => {
    const entries: RequestLogEntry[] = [];
    const app = new Hono();
    app.use(
      logRequests(
        (entry) => entries.push(entry),
        (context) => ({ tag: context.req.header("x-tag") }),
      ),
    );
    app.get("/thing", (context) => context.text("ok", 201));
    await app.request("/thing", { headers: { "x-tag": "seen" } });
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({ method: "GET", path: "/thing", status: 201, tag: "seen" });
    expect(entries[0]!.duration_ms).toBeGreaterThanOrEqual(0);
  });
});
