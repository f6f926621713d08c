import { fileURLToPath } from "node:url";
import react from "@vitejs/plugin-react";
import { defaultClientConditions, defineConfig, type Plugin } from "vite";
// The config is loaded before any package is built, so it reads wire's constants from source
// rather than from @deckhand/wire's dist.
import { WEB_CSP_NONCE_PLACEHOLDER, WirePath } from "../../packages/wire/src/constants.ts";

/**
 * codemirror-json-schema renders schema descriptions with markdown-it and shiki (about 200 KB
 * gzipped); its markdown module is swapped for a marked-based one with the same export.
 */
function schemaMarkdownOverMarked(): Plugin {
  const replacement = fileURLToPath(new URL("./src/batches/schema-markdown.ts", import.meta.url));
  return {
    name: "deckhand:schema-markdown-over-marked",
    enforce: "pre",
    resolveId(source, importer) {
      if (importer?.includes("codemirror-json-schema") && /\/utils\/markdown(\.js)?$/.test(source))
        return replacement;
      return null;
    },
  };
}

export default defineConfig({
  plugins: [schemaMarkdownOverMarked(), react()],
  // Workspace packages (@deckhand/wire) are bundled from their TypeScript sources, as tests run them.
  resolve: { conditions: ["source", ...defaultClientConditions] },
  // The server serves index.html with a fresh nonce in place of this placeholder (on the page's
  // tags and in <meta property="csp-nonce">), named in its Content-Security-Policy: the one way a
  // <style> the page adds at run time (the code editor's) is allowed.
  html: { cspNonce: WEB_CSP_NONCE_PLACEHOLDER },
  build: {
    outDir: "dist",
    emptyOutDir: true,
    // Hashed file names under assets/: the server serves them as immutable.
    assetsDir: "assets",
    sourcemap: false,
    // The initial chunk is about 200 KB gzipped (the budget is 300 KB) and the lazily loaded spec
    // editor about 225 KB; Vite's warning is about raw size.
    chunkSizeWarningLimit: 800,
  },
  server: {
    // `pnpm --filter @deckhand/web dev` against a `deckhand up` on the default address.
    proxy: { [WirePath.serverApi]: { target: "http://127.0.0.1:7420", ws: true } },
  },
});
