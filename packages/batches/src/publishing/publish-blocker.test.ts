import { describe, expect, it } from "vitest";
import { publishBlocker } from "./publish-blocker.ts";

const directory = {
  repository: {
    id: "directory:/code/acme/api",
    name: "acme/api",
    host: { type: "directory" as const, root: "/code" },
    path: "/code/acme/api",
    url: null,
  },
};
const git = {
  repository: {
    id: "git:https://git.example.com/acme/web.git",
    name: "acme/web",
    host: { type: "git" as const, url: "https://git.example.com/acme/web.git", cachePath: "/c" },
    path: "/c",
    url: "https://git.example.com/acme/web.git",
  },
};
const base = { branch: "batch/x", applied: true, pushed: false, pushRefused: false };

describe("publishBlocker", () => {
  it("says a directory host's applied changeset is a local branch with no remote to open a pull request on", () => {
    const reason = publishBlocker({
      ...base,
      repository: "acme/api",
      definition: directory,
      connected: false,
    });
    expect(reason).toContain("is applied as the local branch batch/x in /code/acme/api");
    expect(reason).toContain("no remote URL a code host connection can match");
    expect(reason).not.toContain("is not applied");
  });

  it("names the missing connection, the refused push, or the missing apply", () => {
    expect(
      publishBlocker({ ...base, repository: "acme/web", definition: git, connected: false }),
    ).toContain("no code host connection in codeHostConnections (config.json) matches");
    expect(
      publishBlocker({
        ...base,
        repository: "acme/web",
        definition: git,
        connected: true,
        pushRefused: true,
      }),
    ).toContain("was not pushed, as its run asked (push: false)");
    expect(
      publishBlocker({
        ...base,
        applied: false,
        repository: "acme/web",
        definition: git,
        connected: true,
      }),
    ).toBe("changeset acme/web@batch/x is not applied yet; apply its run first");
  });

  it("lets an applied, pushed changeset with a connection through", () => {
    expect(
      publishBlocker({
        ...base,
        pushed: true,
        repository: "acme/web",
        definition: git,
        connected: true,
      }),
    ).toBeNull();
  });
});
