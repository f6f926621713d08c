// biome-ignore-all lint/suspicious/noTemplateCurlyInString: batch spec templates use ${{ }}, and they are what these tests are about
import { describe, expect, it } from "vitest";
import { BatchSpecError } from "./batch-spec-error.ts";
import { evaluateStaticCondition } from "./static-condition.ts";

const input = {
  repository: { name: "github.com/acme/api", branch: "main" },
  batchChange: { name: "b" },
};

describe("evaluateStaticCondition", () => {
  it("treats a missing condition as true and booleans as themselves", () => {
    expect(evaluateStaticCondition(undefined, input)).toBe(true);
    expect(evaluateStaticCondition(false, input)).toBe(false);
    expect(evaluateStaticCondition("true", input)).toBe(true);
    expect(evaluateStaticCondition("yes", input)).toBe(false);
  });

  it("decides conditions on the repository and batch change ahead of execution", () => {
    expect(
      evaluateStaticCondition('${{ matches repository.name "github.com/acme/*" }}', input),
    ).toBe(true);
    expect(evaluateStaticCondition('${{ eq repository.branch "dev" }}', input)).toBe(false);
    expect(evaluateStaticCondition('${{ eq batch_change.name "b" }}', input)).toBe(true);
  });

  it("decides the pathological matches condition at once (no backtracking glob)", () => {
    // `*a*a*a*a*a*a*a*a*b` against 44 `a`s took 24-27 s on the server as a backtracking regular
    // expression (9 s here), during which the server resolving the spec answered nothing, and
    // each further `a` took half as long again: 48 outlast the test timeout. @deckhand/glob
    // takes a few hundred steps (its own test bounds them).
    const text = "a".repeat(48);
    const pattern = "*a*a*a*a*a*a*a*a*b";
    expect(evaluateStaticCondition(`\${{ matches "${text}" "${pattern}" }}`, input)).toBe(false);
    expect(evaluateStaticCondition(`\${{ matches "${text}b" "${pattern}" }}`, input)).toBe(true);
  });

  it("leaves a condition that does too much work to run time, deciding it as dynamic", () => {
    // 4,000,000 steps: seconds of work, once per step and repository, while the server
    // resolving the spec answers nothing else. Ahead of time it stops after the budget.
    const heavy = "${{ range $i := 2000 }}${{ range $j := 2000 }}${{ end }}${{ end }}false";
    expect(evaluateStaticCondition(heavy, input)).toBe("dynamic");
    expect(evaluateStaticCondition("${{ range $i := 10 }}${{ end }}true", input)).toBe(true);
  });

  it("says dynamic for conditions on outputs or step results", () => {
    expect(evaluateStaticCondition('${{ eq outputs.x "y" }}', input)).toBe("dynamic");
    expect(evaluateStaticCondition('${{ eq previous_step.stdout "ok" }}', input)).toBe("dynamic");
    expect(evaluateStaticCondition("${{ steps.modified_files }}", input)).toBe("dynamic");
    expect(evaluateStaticCondition("${{ $.outputs.x }}", input)).toBe("dynamic");
  });

  it("stays static when and/or decide before reaching a dynamic value", () => {
    expect(
      evaluateStaticCondition('${{ and (eq repository.branch "dev") outputs.x }}', input),
    ).toBe(false);
    expect(
      evaluateStaticCondition('${{ or (eq repository.branch "main") outputs.x }}', input),
    ).toBe(true);
  });

  it("throws for template errors", () => {
    expect(() => evaluateStaticCondition("${{ nope }}", input)).toThrow(BatchSpecError);
  });
});
