import { describe, expect, it } from "vitest";
import { stepLabel } from "./step-label.ts";

describe("stepLabel", () => {
  it("names a step by its command's first line, or its coding agent and prompt, shortened", () => {
    expect(stepLabel({ run: "  npm test  " })).toBe("npm test");
    expect(stepLabel({ run: "set -e\nnpm ci\nnpm test" })).toBe("set -e…");
    expect(stepLabel({ run: `echo ${"x".repeat(100)}` })).toHaveLength(80);
    expect(
      stepLabel({ codingAgent: { type: "codex", prompt: "Fix the tests\nall of them" } }),
    ).toBe("codingAgent codex: Fix the tests…");
    expect(stepLabel(undefined)).toBe("");
  });
});
