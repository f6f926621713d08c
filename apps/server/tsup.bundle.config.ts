import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  applicationBundleConfig,
  copyDatabaseRuntimeFiles,
  copyWebUi,
} from "@deckhand/tsup-config";
import { defineConfig } from "tsup";

const here = dirname(fileURLToPath(import.meta.url));
const outDir = join(here, "dist/server");

export default defineConfig(
  // The deployable server: a machine needs only Node and `dist/` (the bundle, PGlite's files,
  // the migrations) to run it. Split at dynamic imports: a module loaded on first use (the
  // Kubernetes client) becomes a chunk beside the entry. In one file, esbuild would make every
  // module it imports initialise lazily, and a dependency read at the top of another module
  // (zod's schema classes, by the agent protocol's schemas) could be used before it is made.
  applicationBundleConfig({
    entry: { "deckhand-server": "src/main.ts" },
    outDir,
    splitting: true,
    async onSuccess() {
      copyDatabaseRuntimeFiles({
        bundleDirectory: outDir,
        migrationsDirectory: join(here, "dist/migrations"),
      });
      copyWebUi(outDir);
    },
  }),
);
