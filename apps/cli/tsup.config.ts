import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  applicationBundleConfig,
  copyDatabaseRuntimeFiles,
  copyWebUi,
} from "@deckhand/tsup-config";
import { defineConfig } from "tsup";

const here = dirname(fileURLToPath(import.meta.url));
const outDir = join(here, "dist/bin");

export default defineConfig(
  // The published `deckhand` command: every dependency inlined, so `npm install -g` needs no
  // dependency of its own. Split at each command's dynamic import, so `deckhand version` or
  // `deckhand batch validate` loads a small chunk and never the server, PGlite or the agent.
  applicationBundleConfig({
    entry: { deckhand: "src/bin.ts" },
    outDir,
    clean: true,
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
