import { libraryConfig } from "@deckhand/tsup-config";

export default libraryConfig();
