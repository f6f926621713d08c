import { describe, expect, it } from "vitest";
import { closestMatch, editDistance } from "./suggest.ts";

describe("suggestions", () => {
  it("counts insertions, deletions, substitutions and transpositions as one edit each", () => {
    expect(editDistance("container", "contaner")).toBe(1);
    expect(editDistance("branch", "brnach")).toBe(1);
    expect(editDistance("abc", "abd")).toBe(1);
    expect(editDistance("", "abc")).toBe(3);
  });

  it("suggests the closest candidate, ignoring case, '_' and '-'", () => {
    expect(closestMatch("contaner", ["container", "run"])).toBe("container");
    expect(closestMatch("changeset_template", ["changesetTemplate", "steps"])).toBe(
      "changesetTemplate",
    );
    expect(closestMatch("Env", ["env"])).toBe("env");
  });

  it("suggests nothing when no candidate is close", () => {
    expect(closestMatch("zzz", ["name", "steps"])).toBeUndefined();
  });
});
