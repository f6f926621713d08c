import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { WirePath } from "@deckhand/wire";
import { serveStatic } from "@hono/node-server/serve-static";
import type { Hono } from "hono";

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
 * site may frame a page (clickjacking), and forms and `<base>` cannot point elsewhere.
 */
export const WEB_UI_CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join("; ");

/** Vite puts content-hashed files under assets/: a changed file gets a new name, so they never go stale. */
const IMMUTABLE = "public, max-age=31536000, immutable";
/** index.html names the current hashed files, so a browser must revalidate it on every load. */
const REVALIDATE = "no-cache";

/**
 * Serves the web UI from `webDir` at `/`: its files with their content types, and index.html for
 * any other GET (the UI's own routes, such as /sessions/:id), registered after the API so it
 * answers only what nothing else did. Missing files under assets/ stay 404s: a stale page must
 * see its script fail, not receive HTML as JavaScript.
 */
export function serveWebUi(app: Hono, webDir: string): void {
  const files = serveStatic({ root: webDir });
  const indexPage = serveStatic({ root: webDir, path: "index.html" });
  /** The cache policy goes on the response itself: serveStatic has already built it. */
  const withCaching = (response: Response, policy: string) => {
    response.headers.set("Cache-Control", policy);
    return response;
  };
  app.get("*", async (context, next) => {
    const path = context.req.path;
    if (isServerPath(path)) return next();
    const served = await files(context, async () => {});
    if (served) return withCaching(served, path.startsWith("/assets/") ? IMMUTABLE : REVALIDATE);
    if (path.startsWith("/assets/")) return next();
    const page = await indexPage(context, async () => {});
    return page ? withCaching(page, REVALIDATE) : next();
  });
}
