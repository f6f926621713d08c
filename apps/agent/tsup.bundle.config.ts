import { defineConfig } from "tsup";

export default defineConfig({
  // The standalone daemon: every dependency, workspace packages included, inlined into one
  // file so a workspace machine needs only Node to run it.
  entry: { "deckhand-agent": "src/main.ts" },
  format: ["esm"],
  outExtension: () => ({ js: ".mjs" }),
  platform: "node",
  target: "node22",
  noExternal: [/.*/],
  esbuildOptions(options) {
    options.conditions = ["source", "node", "import"];
    // Some bundled CommonJS dependencies call require() for Node built-ins.
    options.banner = {
      js: 'import { createRequire as __deckhandCreateRequire } from "node:module"; const require = __deckhandCreateRequire(import.meta.url);',
    };
  },
  sourcemap: false,
  splitting: false,
});
