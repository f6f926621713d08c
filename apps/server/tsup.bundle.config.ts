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
  // The deployable server: one file, so a machine needs only Node and `dist/` (the bundle,
  // PGlite's files, the migrations) to run it.
  applicationBundleConfig({
    entry: { "deckhand-server": "src/main.ts" },
    outDir,
    async onSuccess() {
      copyDatabaseRuntimeFiles({
        bundleDirectory: outDir,
        migrationsDirectory: join(here, "dist/migrations"),
      });
      copyWebUi(outDir);
    },
  }),
);
