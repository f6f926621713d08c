import { libraryConfig } from "@deckhand/tsup-config";

// `node-http` is the transport over node:http for Node processes (src/node-http-transport.ts).
export default libraryConfig({ entry: ["src/index.ts", "src/node-http-transport.ts"] });
