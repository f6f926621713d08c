import { defineConfig } from "tsup";

export default defineConfig([
  {
    // The library entry the CLI composes.
    entry: ["src/index.ts"],
    format: ["esm"],
    dts: true,
    sourcemap: true,
    target: "node22",
  },
]);
