import { cpSync, mkdirSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { defineConfig } from "tsup";

const here = dirname(fileURLToPath(import.meta.url));
const outDir = join(here, "dist/server");

/**
 * Files the bundle loads at run time beside itself, which esbuild cannot inline: PGlite's
 * WebAssembly and data files (found next to the bundle, as next to PGlite's own module), and the
 * SQL migrations (found at `../migrations` from the module that applies them).
 */
function copyRuntimeFiles(): void {
  const requireFromDb = createRequire(join(here, "../../db/package.json"));
  const pgliteDist = dirname(requireFromDb.resolve("@electric-sql/pglite"));
  for (const file of ["pglite.wasm", "pglite.data", "initdb.wasm"]) {
    cpSync(join(pgliteDist, file), join(outDir, file));
  }
  mkdirSync(join(here, "dist/migrations"), { recursive: true });
  cpSync(join(here, "../../db/migrations"), join(here, "dist/migrations"), { recursive: true });
}

export default defineConfig({
  // The deployable server: every dependency inlined into one file, so a machine needs only Node
  // and `dist/` (the bundle, PGlite's files, the migrations) to run it.
  entry: { "deckhand-server": "src/main.ts" },
  outDir,
  format: ["esm"],
  outExtension: () => ({ js: ".mjs" }),
  platform: "node",
  target: "node22",
  noExternal: [/.*/],
  esbuildOptions(options) {
    // Without "import" here, so a bundled require() gets the CommonJS build it expects (pg-pool).
    options.conditions = ["source", "node"];
    // Some bundled CommonJS dependencies call require() for Node built-ins.
    options.banner = {
      js: 'import { createRequire as __deckhandCreateRequire } from "node:module"; const require = __deckhandCreateRequire(import.meta.url);',
    };
  },
  sourcemap: false,
  splitting: false,
  async onSuccess() {
    copyRuntimeFiles();
  },
});
