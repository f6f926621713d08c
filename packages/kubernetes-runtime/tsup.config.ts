import { libraryConfig } from "@deckhand/tsup-config";

// `./config` is the config.json schema alone, so reading a configuration does not load the
// Kubernetes client.
export default libraryConfig({
  entry: { index: "src/index.ts", config: "src/kubernetes-config.ts" },
});
