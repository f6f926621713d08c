import { deckhandProject } from "@deckhand/vitest-config";

export default deckhandProject("server-client");
