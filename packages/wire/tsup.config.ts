import { libraryConfig } from "@deckhand/tsup-config";

// `no-schemas` is the zod-free part a client sends its first request with (src/no-schemas.ts).
export default libraryConfig({ entry: ["src/index.ts", "src/no-schemas.ts"] });
