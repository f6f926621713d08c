import { deckhandProject } from "@deckhand/vitest-config";

// One TypeScript program over every published package takes a few seconds on a busy machine.
export default deckhandProject("api-report", { testTimeout: 60_000 });
