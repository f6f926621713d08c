import { describe, expect, it } from "vitest";
import { type ApplyPlanInput, planApply } from "./apply-plan.ts";

const changeset = { diff: "+a\n", commitMessage: "Add a", published: true };

function plan(overrides: Partial<ApplyPlanInput>) {
  return planApply({
    changeset,
    push: true,
    connected: true,
    previous: null,
    tracked: null,
    ...overrides,
  });
}

describe("planApply", () => {
  it("pushes a new branch and creates a pull request for a published changeset", () => {
    expect(plan({})).toEqual({
      branch: "create",
      push: true,
      pull_request: "create",
      pull_request_number: null,
      summary: "push branch, create pull request",
    });
  });

  it("creates a draft pull request when published is draft", () => {
    expect(plan({ changeset: { ...changeset, published: "draft" } }).summary).toBe(
      "push branch, create draft pull request",
    );
  });

  it("updates the tracked open pull request in place when the diff changed", () => {
    const planned = plan({
      previous: { diff: "+b\n", commitMessage: "Add a" },
      tracked: { number: "12", state: "open" },
    });
    expect(planned).toMatchObject({
      branch: "update",
      pull_request: "update",
      pull_request_number: "12",
      summary: "push branch update, update pull request #12",
    });
  });

  it("says no change when the branch would get the same diff and its pull request is open", () => {
    expect(
      plan({
        previous: { diff: "+a\n", commitMessage: "Add a" },
        tracked: { number: "3", state: "draft" },
      }).summary,
    ).toBe("no change");
  });

  it("creates a new pull request when the tracked one was closed or merged", () => {
    expect(
      plan({
        previous: { diff: "+b\n", commitMessage: "Add a" },
        tracked: { number: "3", state: "merged" },
      }),
    ).toMatchObject({ pull_request: "create", pull_request_number: null });
  });

  it("plans no pull request for an unpublished changeset, and says why for a branch not pushed or no connection", () => {
    expect(plan({ changeset: { ...changeset, published: false } }).summary).toBe("push branch");
    expect(plan({ push: false }).summary).toBe(
      "create local branch, no pull request: the branch is not pushed",
    );
    expect(plan({ connected: false })).toMatchObject({
      pull_request: "none",
      summary: "push branch, no pull request: no code host connection matches the repository",
    });
  });
});
