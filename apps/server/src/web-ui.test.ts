import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ServerPath, WEB_CSP_NONCE_PLACEHOLDER, WirePath } from "@deckhand/wire";
import { Hono } from "hono";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { serveWebUi } from "./web-ui.ts";

let webDir: string;
let app: Hono;

beforeEach(() => {
  webDir = mkdtempSync(join(tmpdir(), "deckhand-web-ui-"));
  mkdirSync(join(webDir, "assets"));
  writeFileSync(
    join(webDir, "index.html"),
    `<!doctype html><title>Deckhand</title><meta property="csp-nonce" nonce="${WEB_CSP_NONCE_PLACEHOLDER}"><script type="module" src="/assets/index-abc123.js" nonce="${WEB_CSP_NONCE_PLACEHOLDER}"></script>`,
  );
  writeFileSync(join(webDir, "assets/index-abc123.js"), "console.log(1)");
  writeFileSync(join(webDir, "assets/index-abc123.css"), "body{}");
  writeFileSync(join(webDir, "favicon.svg"), "<svg/>");
  app = new Hono();
  app.get(ServerPath.health, (context) => context.json({ status: "ok" }));
  serveWebUi(app, webDir);
  app.notFound((context) => context.json({ error: { code: "not_found", message: "no" } }, 404));
});

afterEach(() => rmSync(webDir, { recursive: true, force: true }));

describe("serveWebUi", () => {
  it("serves index.html at / for revalidation on every load", async () => {
    const response = await app.request("/");
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toContain("text/html");
    expect(response.headers.get("cache-control")).toBe("no-cache");
  });

  it("gives every answer of the page a fresh nonce, in its tags and in its policy", async () => {
    const nonces: string[] = [];
    for (const path of ["/", "/index.html", "/sessions/x"]) {
      const response = await app.request(path);
      const html = await response.text();
      expect(html).not.toContain(WEB_CSP_NONCE_PLACEHOLDER);
      const nonce = /<meta property="csp-nonce" nonce="([^"]+)">/.exec(html)?.[1];
      expect(nonce, path).toMatch(/^[A-Za-z0-9+/]{22}==$/);
      expect(html).toContain(`src="/assets/index-abc123.js" nonce="${nonce}"`);
      const policy = response.headers.get("content-security-policy") ?? "";
      expect(policy).toContain(`style-src 'self' 'nonce-${nonce}';`);
      expect(policy).toContain("style-src-attr 'unsafe-inline'");
      expect(policy).toContain("script-src 'self';");
      expect(policy).toContain("frame-ancestors 'none'");
      // A validator would let the browser reuse a page whose nonce the policy no longer names.
      expect(response.headers.get("etag")).toBeNull();
      expect(response.headers.get("last-modified")).toBeNull();
      nonces.push(nonce!);
    }
    expect(new Set(nonces).size).toBe(3);
  });

  it("serves hashed assets with their content type as immutable", async () => {
    const script = await app.request("/assets/index-abc123.js");
    expect(script.headers.get("content-type")).toContain("text/javascript");
    expect(script.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    const style = await app.request("/assets/index-abc123.css");
    expect(style.headers.get("content-type")).toContain("text/css");
    const icon = await app.request("/favicon.svg");
    expect(icon.headers.get("content-type")).toContain("image/svg+xml");
    expect(icon.headers.get("cache-control")).toBe("no-cache");
  });

  it("answers the UI's own routes with index.html", async () => {
    const response = await app.request("/sessions/0b6f3c1e-0000-4000-8000-000000000000");
    expect(response.status).toBe(200);
    expect(await response.text()).toContain("<title>Deckhand</title>");
  });

  it("never shadows the API or the model proxy, and a missing asset stays a 404", async () => {
    expect(await (await app.request(ServerPath.health)).json()).toEqual({ status: "ok" });
    for (const path of [
      `${WirePath.serverApi}/no-such-route`,
      WirePath.serverApi,
      `${WirePath.modelProvider}/x`,
      "/assets/gone.js",
    ]) {
      const response = await app.request(path);
      expect(response.status, path).toBe(404);
      expect(response.headers.get("content-type"), path).toContain("application/json");
    }
  });

  it("does not serve files outside its directory", async () => {
    const response = await app.request("/..%2f..%2fetc%2fpasswd");
    expect(await response.text()).not.toContain("root:");
  });
});
