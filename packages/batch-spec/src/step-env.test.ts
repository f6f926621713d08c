// biome-ignore-all lint/suspicious/noTemplateCurlyInString: batch spec templates use ${{ }}, and they are what these tests are about
import { describe, expect, it } from "vitest";
import { passedThroughEnvNames, resolveStepEnv } from "./step-env.ts";

describe("resolveStepEnv", () => {
  it("returns a map as written", () => {
    expect(resolveStepEnv({ A: "1", B: "${{ repository.name }}" })).toEqual({
      A: "1",
      B: "${{ repository.name }}",
    });
  });

  it("passes listed names through from the runner and takes one-key maps as written", () => {
    expect(
      resolveStepEnv(["HOME", { A: "1" }, "MISSING"], { HOME: "/home/me", OTHER: "x" }),
    ).toEqual({
      HOME: "/home/me",
      A: "1",
      MISSING: "",
    });
    expect(passedThroughEnvNames(["HOME", { A: "1" }])).toEqual(["HOME"]);
  });

  it("lets a later entry override an earlier one", () => {
    expect(resolveStepEnv([{ A: "1" }, { A: "2" }])).toEqual({ A: "2" });
  });
});
