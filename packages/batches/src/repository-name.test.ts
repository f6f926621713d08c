import { describe, expect, it } from "vitest";
import { redactUrl, repositoryNameFromUrl } from "./repository-name.ts";

describe("repositoryNameFromUrl", () => {
  it.each([
    ["https://github.com/acme/api.git", "github.com/acme/api"],
    ["https://github.com/acme/api", "github.com/acme/api"],
    ["https://user:token@GitHub.com:8443/acme/api.git/", "github.com/acme/api"],
    ["ssh://git@github.com/acme/api.git", "github.com/acme/api"],
    ["ssh://git@github.com:2222/acme/api", "github.com/acme/api"],
    ["git@github.com:acme/api.git", "github.com/acme/api"],
    ["github.com:acme/api", "github.com/acme/api"],
    ["git://example.org/group/sub/project.git", "example.org/group/sub/project"],
    ["file:///srv/git/acme/api.git", "srv/git/acme/api"],
    ["/srv/git/acme/api", "srv/git/acme/api"],
  ])("names %s as %s, whatever the scheme, credentials, port or .git", (url, name) => {
    expect(repositoryNameFromUrl(url)).toBe(name);
  });

  it("is undefined for text that is no URL", () => {
    expect(repositoryNameFromUrl("")).toBeUndefined();
    expect(repositoryNameFromUrl("just-a-word")).toBeUndefined();
    expect(repositoryNameFromUrl("https://")).toBeUndefined();
  });
});

describe("redactUrl", () => {
  it("drops a password or token and keeps the rest", () => {
    expect(redactUrl("https://user:s3cret@github.com/acme/api.git")).toBe(
      "https://user@github.com/acme/api.git",
    );
    expect(redactUrl("git@github.com:acme/api.git")).toBe("git@github.com:acme/api.git");
    expect(redactUrl("file:///srv/x")).toBe("file:///srv/x");
  });
});
