import { cpSync, existsSync, mkdirSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
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

/**
 * The build of a program a machine runs with nothing but Node: every dependency, workspace
 * packages included, inlined; workspace packages from their TypeScript sources, so the bundle
 * does not depend on their own builds. Programs pass their entry and output directory.
 */
export function applicationBundleConfig(overrides: Options = {}): Options {
  return {
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
    ...overrides,
  };
}

const repositoryRoot = join(dirname(fileURLToPath(import.meta.url)), "../..");

/**
 * Copies the files a bundle that opens the database loads at run time beside itself, which
 * esbuild cannot inline: PGlite's WebAssembly and data files into `bundleDirectory` (PGlite
 * finds them next to the module that holds it), and the SQL migrations into
 * `migrationsDirectory`, which must be `../migrations` from the bundle (the db package resolves
 * them from its own module).
 */
export function copyDatabaseRuntimeFiles(options: {
  bundleDirectory: string;
  migrationsDirectory: string;
}): void {
  const requireFromDb = createRequire(join(repositoryRoot, "db/package.json"));
  const pgliteDist = dirname(requireFromDb.resolve("@electric-sql/pglite"));
  mkdirSync(options.bundleDirectory, { recursive: true });
  for (const file of ["pglite.wasm", "pglite.data", "initdb.wasm"]) {
    cpSync(join(pgliteDist, file), join(options.bundleDirectory, file));
  }
  mkdirSync(options.migrationsDirectory, { recursive: true });
  cpSync(join(repositoryRoot, "db/migrations"), options.migrationsDirectory, { recursive: true });
}

/**
 * Copies the built web UI (`apps/web/dist`) into `<bundleDirectory>/web`, where the bundled
 * server looks for it (apps/server/src/web-ui.ts), so `deckhand up` from an installed bundle
 * serves the UI too. Bundles that ship it list `@deckhand/web` as a dependency, so turbo builds
 * the UI first.
 */
export function copyWebUi(bundleDirectory: string): void {
  const webDist = join(repositoryRoot, "apps/web/dist");
  if (!existsSync(join(webDist, "index.html"))) {
    throw new Error(`${webDist} has no index.html: build @deckhand/web first (pnpm build does)`);
  }
  cpSync(webDist, join(bundleDirectory, "web"), { recursive: true });
}
