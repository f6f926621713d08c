import { describe, expect, it } from "vitest";
import { titleFromPrompt } from "../screens/prompt-session-screen.tsx";
import { ago } from "./relative-time.ts";

describe("ago", () => {
  const now = Date.parse("2026-03-01T12:00:00Z");
  it("says how long ago in words a person reads at a glance", () => {
    expect(ago("2026-03-01T11:59:30Z", now)).toBe("just now");
    expect(ago("2026-03-01T11:55:00Z", now)).toBe("5 min ago");
    expect(ago("2026-03-01T09:00:00Z", now)).toBe("3 h ago");
    expect(ago("2026-02-20T09:00:00Z", now)).toBe(
      new Date("2026-02-20T09:00:00Z").toLocaleDateString(),
    );
  });
});

describe("titleFromPrompt", () => {
  it("names a session by its prompt's first line, cut at a readable length", () => {
    expect(titleFromPrompt("  tidy the README\nand say so")).toBe("tidy the README");
    expect(titleFromPrompt("x".repeat(80))).toBe(`${"x".repeat(59)}…`);
  });
});
