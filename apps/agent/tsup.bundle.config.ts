import { applicationBundleConfig } from "@deckhand/tsup-config";
import { defineConfig } from "tsup";

export default defineConfig(
  // The standalone daemon: one file, so a workspace machine needs only Node to run it.
  applicationBundleConfig({ entry: { "deckhand-agent": "src/main.ts" } }),
);
