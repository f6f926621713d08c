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

export default defineConfig([
  // The commands: every dependency inlined, so `npm install -g` needs no dependency of its own.
  // Split at each command's dynamic import, so `deckhand batch validate` loads a small chunk and
  // never the server, PGlite or the agent. The launcher below is kept when this build cleans.
  applicationBundleConfig({
    entry: { deckhand: "src/bin.ts" },
    outDir,
    clean: ["!deckhand.cjs"],
    splitting: true,
    async onSuccess() {
      copyDatabaseRuntimeFiles({
        bundleDirectory: outDir,
        migrationsDirectory: join(here, "dist/migrations"),
      });
      copyWebUi(outDir);
    },
  }),
  // The published `deckhand` bin: a CommonJS launcher that answers `version` itself and loads
  // the commands' bundle for everything else (src/bin-launcher.ts says why).
  {
    entry: { deckhand: "src/bin-launcher.ts" },
    outDir,
    format: ["cjs"],
    outExtension: () => ({ js: ".cjs" }),
    platform: "node",
    target: "node22",
    sourcemap: false,
    splitting: false,
    clean: false,
  },
]);
