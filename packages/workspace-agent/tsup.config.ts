import { libraryConfig } from "@deckhand/tsup-config";

// `./config` is the agent's settings alone (`parseListenAddress` among them), so a server that
// reads its own listen address does not load the agent's HTTP app, WebSocket server and file API.
export default libraryConfig({
  entry: { index: "src/index.ts", config: "src/config.ts" },
});
