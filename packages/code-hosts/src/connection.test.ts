import { describe, expect, it } from "vitest";
import { CodeHostError } from "./code-host-error.ts";
import {
  apiBase,
  type CodeHostConnection,
  CodeHostConnectionsSchema,
  connectionName,
  DEFAULT_PUBLISH_RATE,
  describeConnection,
  parseCodeHostConnection,
} from "./connection.ts";
import { cloneUrl, resolveRepository } from "./remote-url.ts";

const github: CodeHostConnection = { type: "github", url: "https://github.com", tokenEnv: "GH" };
const enterprise: CodeHostConnection = {
  type: "github",
  url: "https://ghe.example.com",
  tokenEnv: "GHE",
};
const gitlab: CodeHostConnection = {
  type: "gitlab",
  url: "https://gitlab.example.com/gitlab",
  tokenEnv: "GL",
};
const bitbucket: CodeHostConnection = {
  type: "bitbucket-cloud",
  url: "https://bitbucket.org",
  tokenEnv: "BB",
};
const gitea: CodeHostConnection = { type: "gitea", url: "http://127.0.0.1:3000", tokenEnv: "GT" };
const all = [github, enterprise, gitlab, bitbucket, gitea];

describe("connection configuration", () => {
  it("parses each type and rejects what no client can use, naming the field", () => {
    expect(parseCodeHostConnection({ ...github, publishRate: { perMinute: 10 } })).toEqual({
      ...github,
      publishRate: { perMinute: 10 },
    });
    const attempts: [unknown, string][] = [
      [{ ...github, type: "svn" }, "type"],
      [{ ...github, url: "github.com" }, "url"],
      [{ ...github, url: "https://user:secret@github.com" }, "url"],
      [{ ...github, tokenEnv: "not a name" }, "tokenEnv"],
      [{ ...github, token: "ghp_inline" }, "token"],
      [{ ...github, publishRate: { perMinute: 0 } }, "publishRate.perMinute"],
    ];
    for (const [value, field] of attempts) {
      const error = (() => {
        try {
          parseCodeHostConnection(value);
        } catch (caught) {
          return caught;
        }
      })();
      expect(CodeHostError.isInstance(error) && error.code).toBe("invalid_connection");
      expect((error as Error).message).toContain(field);
    }
  });

  it("refuses two connections with one name", () => {
    const parsed = CodeHostConnectionsSchema.safeParse([github, { ...github, tokenEnv: "OTHER" }]);
    expect(parsed.success).toBe(false);
    expect(CodeHostConnectionsSchema.safeParse(all).success).toBe(true);
  });

  it("derives each type's API base from the web address, unless apiUrl is given", () => {
    expect(apiBase(github)).toBe("https://api.github.com");
    expect(apiBase(enterprise)).toBe("https://ghe.example.com/api/v3");
    expect(apiBase(gitlab)).toBe("https://gitlab.example.com/gitlab/api/v4");
    expect(apiBase(bitbucket)).toBe("https://api.bitbucket.org/2.0");
    expect(apiBase(gitea)).toBe("http://127.0.0.1:3000/api/v1");
    expect(apiBase({ ...gitea, apiUrl: "https://proxy.example.com/gitea/api/v1/" })).toBe(
      "https://proxy.example.com/gitea/api/v1",
    );
  });

  it("names a connection by its name, else its host and path", () => {
    expect(connectionName(github)).toBe("github.com");
    expect(connectionName(gitlab)).toBe("gitlab.example.com/gitlab");
    expect(connectionName({ ...github, name: "work" })).toBe("work");
  });
});

describe("resolveRepository", () => {
  it.each([
    ["https://github.com/acme/api.git", github, "acme/api"],
    ["https://github.com/acme/api", github, "acme/api"],
    ["https://x-access-token:secret@github.com/acme/api.git/", github, "acme/api"],
    ["git@github.com:acme/api.git", github, "acme/api"],
    ["ssh://git@github.com/acme/api.git", github, "acme/api"],
    ["https://ghe.example.com/acme/api.git", enterprise, "acme/api"],
    ["https://gitlab.example.com/gitlab/group/sub/api.git", gitlab, "group/sub/api"],
    ["git@gitlab.example.com:group/sub/api.git", gitlab, "group/sub/api"],
    ["ssh://git@gitlab.example.com:2222/group/api.git", gitlab, "group/api"],
    ["https://someone@bitbucket.org/workspace/repo.git", bitbucket, "workspace/repo"],
    ["git@bitbucket.org:workspace/repo.git", bitbucket, "workspace/repo"],
    ["http://127.0.0.1:3000/acme/api.git", gitea, "acme/api"],
  ])("maps %s to its connection and repository", (url, connection, repository) => {
    expect(resolveRepository(all, url)).toEqual({ connection, repository });
  });

  it.each([
    ["https://gitlab.com/acme/api.git", "a host with no connection"],
    ["http://127.0.0.1:4000/acme/api.git", "another port of the same host"],
    ["https://gitlab.example.com/acme/api.git", "outside the connection's path prefix"],
    ["https://github.com/acme/api/extra.git", "a path GitHub cannot have"],
    ["https://github.com/acme.git", "an owner without a repository"],
    ["file:///srv/git/acme/api.git", "a local path"],
    ["not a url", "text that is no URL"],
  ])("maps %s to nothing (%s)", (url) => {
    expect(resolveRepository(all, url)).toBeUndefined();
  });

  it("prefers the connection whose path prefix matches over one for the bare host", () => {
    const root: CodeHostConnection = { ...gitlab, url: "https://gitlab.example.com", name: "root" };
    expect(
      resolveRepository([root, gitlab], "https://gitlab.example.com/gitlab/group/api.git")
        ?.connection,
    ).toBe(gitlab);
  });

  it("gives the https clone URL pushes use", () => {
    expect(cloneUrl(gitlab, "group/sub/api")).toBe(
      "https://gitlab.example.com/gitlab/group/sub/api.git",
    );
  });
});

describe("describeConnection", () => {
  it("names the token's variable and whether it is set, never the token", () => {
    const token = "ghp_describeCanary0123456789";
    const described = describeConnection(github, { GH: token });
    expect(described).toEqual({
      name: "github.com",
      type: "github",
      url: "https://github.com",
      api_url: "https://api.github.com",
      token_env: "GH",
      token_set: true,
      publish_rate_per_minute: DEFAULT_PUBLISH_RATE.perMinute,
    });
    expect(JSON.stringify(described)).not.toContain(token);
  });

  it("counts a blank variable as unset and keeps a configured publication rate", () => {
    const paced: CodeHostConnection = { ...github, publishRate: { perMinute: 6 } };
    expect(describeConnection(paced, { GH: "  " })).toMatchObject({
      token_set: false,
      publish_rate_per_minute: 6,
    });
    expect(describeConnection(paced, {}).token_set).toBe(false);
  });
});
