import { describe, expect, it } from "vitest";
import { startingAgent } from "./starting-agent.ts";

describe("startingAgent", () => {
  const ready = ["deckhand", "scripted"];

  it("takes the session's own agent over the first ready one", () => {
    expect(startingAgent(null, "scripted", ready)).toBe("scripted");
  });

  it("takes the agent the link asked for over the session's", () => {
    expect(startingAgent("deckhand", "scripted", ready)).toBe("deckhand");
  });

  it("skips an agent that is not ready, falling back to the first ready one", () => {
    expect(startingAgent("codex", "gemini", ready)).toBe("deckhand");
    expect(startingAgent(null, null, [])).toBe("");
  });
});
