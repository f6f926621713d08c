import { deckhandProject } from "@deckhand/vitest-config";

export default deckhandProject("e2e", { testTimeout: 180_000, hookTimeout: 180_000 });
