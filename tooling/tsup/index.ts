import type { Options } from "tsup";

/**
 * The one build configuration every published package uses: ESM for Node 22, type declarations,
 * source maps, from `src/index.ts`. Packages pass only what differs.
 */
export function libraryConfig(overrides: Options = {}): Options {
  return {
    entry: ["src/index.ts"],
    format: ["esm"],
    dts: true,
    clean: true,
    sourcemap: true,
    target: "node22",
    ...overrides,
  };
}
