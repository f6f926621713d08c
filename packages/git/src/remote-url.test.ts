import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseRemoteUrl, redactUrl, repositoryNameFromUrl } from "./remote-url.ts";

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

describe("parseRemoteUrl", () => {
  it("keeps the scheme and port that repository names fold away", () => {
    expect(parseRemoteUrl("https://GitHub.example.com:8443/acme/api.git")).toEqual({
      scheme: "https",
      hostname: "github.example.com",
      port: "8443",
      path: "acme/api",
    });
    expect(parseRemoteUrl("git+ssh://git@host/a/b")).toMatchObject({
      scheme: "ssh",
      port: undefined,
    });
    expect(parseRemoteUrl("git@host:a/b.git")).toEqual({
      scheme: "ssh",
      hostname: "host",
      port: undefined,
      path: "a/b",
    });
    expect(parseRemoteUrl("/srv/git/a")).toEqual({
      scheme: "file",
      hostname: "",
      port: undefined,
      path: "srv/git/a",
    });
  });

  it("names a repository alike in its https, ssh and scp-like spellings", () => {
    const segment = fc.stringMatching(/^[a-z0-9][a-z0-9_-]{0,15}$/);
    fc.assert(
      fc.property(segment, segment, segment, fc.boolean(), (host, owner, name, dotGit) => {
        const suffix = dotGit ? ".git" : "";
        const expected = `${host}.example/${owner}/${name}`;
        for (const url of [
          `https://${host}.example/${owner}/${name}${suffix}`,
          `ssh://git@${host}.example:2222/${owner}/${name}${suffix}`,
          `git@${host}.example:${owner}/${name}${suffix}`,
        ]) {
          expect(repositoryNameFromUrl(url)).toBe(expected);
        }
      }),
    );
  });
});
