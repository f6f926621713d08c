import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { WEB_CSP_NONCE_PLACEHOLDER, WirePath } from "@deckhand/wire";
import { serveStatic } from "@hono/node-server/serve-static";
import type { Context, Hono } from "hono";

/** Where the built web UI (`@deckhand/web`'s `vite build`) is looked for when none is configured. */
const WEB_DIR_CANDIDATES = [
  // From apps/server/src (run from source) and apps/server/dist: the workspace's apps/web/dist.
  new URL("../../web/dist", import.meta.url),
  // Beside a bundle that ships the UI in a `web` directory next to itself.
  new URL("./web", import.meta.url),
];

/** The built web UI's directory: the first candidate holding an index.html, or null. */
export function findWebDir(): string | null {
  for (const candidate of WEB_DIR_CANDIDATES) {
    const directory = fileURLToPath(candidate);
    if (existsSync(join(directory, "index.html"))) return directory;
  }
  return null;
}

/** Paths the UI must never answer: the API (and its WebSocket) and the model proxy keep their 404s. */
function isServerPath(path: string): boolean {
  return [WirePath.serverApi, WirePath.modelProvider].some(
    (prefix) => path === prefix || path.startsWith(`${prefix}/`),
  );
}

/**
 * What pages the server serves may load: its own scripts, styles, images and fonts (and `data:`
 * images, which the editor's styles use), connections to itself (WebSockets included) and nothing
 * else. No inline script can run, so an injected `<script>` or `on…=` attribute is inert; no other
 * site may frame a page (clickjacking), and forms and `<base>` cannot point elsewhere. `nonce`
 * admits the `<style>` elements the page itself adds (the code editor's), marked with it; style
 * attributes are allowed (see below).
 */
export function webUiContentSecurityPolicy(nonce?: string): string {
  return [
    "default-src 'self'",
    "script-src 'self'",
    nonce === undefined ? "style-src 'self'" : `style-src 'self' 'nonce-${nonce}'`,
    // Style attributes only: the browser's own editing of the code editor's contenteditable
    // writes them (a pasted span's colour), and none can load anything, since images and fonts
    // come only from here. <style> elements still need the nonce.
    "style-src-attr 'unsafe-inline'",
    "img-src 'self' data:",
    "font-src 'self'",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join("; ");
}

/** The policy of every answer but index.html's, which names its own nonce. */
export const WEB_UI_CONTENT_SECURITY_POLICY = webUiContentSecurityPolicy();

/** Vite puts content-hashed files under assets/: a changed file gets a new name, so they never go stale. */
const IMMUTABLE = "public, max-age=31536000, immutable";
/** index.html names the current hashed files, so a browser must revalidate it on every load. */
const REVALIDATE = "no-cache";

/**
 * index.html with a fresh nonce in place of the build's placeholder and in the answer's policy;
 * null when there is no index.html. No validator is sent: a copy kept by the browser holds an
 * old nonce, so every load gets the page anew.
 */
async function servePage(context: Context, webDir: string): Promise<Response | null> {
  let template: string;
  try {
    template = await readFile(join(webDir, "index.html"), "utf8");
  } catch {
    return null;
  }
  const nonce = randomBytes(16).toString("base64");
  context.header("Cache-Control", REVALIDATE);
  context.header("Content-Security-Policy", webUiContentSecurityPolicy(nonce));
  return context.html(template.replaceAll(WEB_CSP_NONCE_PLACEHOLDER, nonce));
}

/**
 * Serves the web UI from `webDir` at `/`: its files with their content types, and index.html for
 * `/` and any other GET (the UI's own routes, such as /sessions/:id), registered after the API so
 * it answers only what nothing else did. Missing files under assets/ stay 404s: a stale page must
 * see its script fail, not receive HTML as JavaScript.
 */
export function serveWebUi(app: Hono, webDir: string): void {
  const files = serveStatic({ root: webDir });
  /** The cache policy goes on the response itself: serveStatic has already built it. */
  const withCaching = (response: Response, policy: string) => {
    response.headers.set("Cache-Control", policy);
    return response;
  };
  app.get("*", async (context, next) => {
    const path = context.req.path;
    if (isServerPath(path)) return next();
    if (path !== "/" && path !== "/index.html") {
      const served = await files(context, async () => {});
      if (served) return withCaching(served, path.startsWith("/assets/") ? IMMUTABLE : REVALIDATE);
      if (path.startsWith("/assets/")) return next();
    }
    return (await servePage(context, webDir)) ?? next();
  });
}
