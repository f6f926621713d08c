import { deckhandProject } from "@deckhand/vitest-config";

export default deckhandProject("spawn-host");
