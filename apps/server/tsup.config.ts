import { libraryConfig } from "@deckhand/tsup-config";

// `./batch-runner` is the batch engine alone, for the CLI's standalone batch runs: importing it
// does not load the sessions, the HTTP API or the workspace agent.
export default libraryConfig({
  entry: { index: "src/index.ts", "batch-runner": "src/batch-runner.ts" },
});
