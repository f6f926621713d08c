import { deckhandProject } from "@deckhand/vitest-config";

export default deckhandProject("e2e", { testTimeout: 60_000, hookTimeout: 60_000 });
