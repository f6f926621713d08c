import { describe, expect, it } from "vitest";
import type { PublishedInput } from "./batch-spec-schema.ts";
import { resolvePublished } from "./published.ts";

describe("resolvePublished", () => {
  it("returns a single value for every changeset, and null when unset", () => {
    expect(resolvePublished(true, "github.com/a/b")).toBe(true);
    expect(resolvePublished("draft", "github.com/a/b")).toBe("draft");
    expect(resolvePublished(null, "github.com/a/b")).toBeNull();
    expect(resolvePublished(undefined, "github.com/a/b")).toBeNull();
  });

  it("lets the last matching rule win", () => {
    const rules: PublishedInput = [
      { "github.com/*": true },
      { "github.com/acme/*": "draft" as const },
      { "gitlab.com/*": false },
    ];
    expect(resolvePublished(rules, "github.com/acme/api")).toBe("draft");
    expect(resolvePublished(rules, "github.com/other/api")).toBe(true);
    expect(resolvePublished(rules, "gitlab.com/x/y")).toBe(false);
    expect(resolvePublished(rules, "bitbucket.org/x/y")).toBeNull();
  });

  it("applies @branch patterns only to that branch, compared exactly as src-cli does", () => {
    const rules: PublishedInput = [
      { "github.com/acme/*": false },
      { "github.com/acme/*@release-1": true },
      { "github.com/acme/api@release-{1,2}": "draft" as const },
    ];
    expect(resolvePublished(rules, "github.com/acme/api", "release-1")).toBe(true);
    expect(resolvePublished(rules, "github.com/acme/web", "release-1")).toBe(true);
    expect(resolvePublished(rules, "github.com/acme/api", "release-2")).toBe(false);
    expect(resolvePublished(rules, "github.com/acme/api", "main")).toBe(false);
    expect(resolvePublished(rules, "github.com/acme/api")).toBe(false);
    // A branch that kept a newline from a step's output is another branch.
    expect(resolvePublished(rules, "github.com/acme/api", "release-1\n")).toBe(false);
  });

  it("treats an empty @branch as no branch restriction, as src-cli does", () => {
    expect(resolvePublished([{ "github.com/acme/api@": true }], "github.com/acme/api", "x")).toBe(
      true,
    );
  });
});
