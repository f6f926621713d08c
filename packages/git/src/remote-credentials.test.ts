import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { remoteUrlPasswords, separateRemoteCredentials } from "./remote-credentials.ts";

/** The variables `GIT_CONFIG_COUNT` numbers, as `key=value` lines. */
function configEntries(environment: Record<string, string> | undefined): string[] {
  if (environment === undefined) return [];
  return Array.from(
    { length: Number(environment.GIT_CONFIG_COUNT) },
    (_, index) =>
      `${environment[`GIT_CONFIG_KEY_${index}`]}=${environment[`GIT_CONFIG_VALUE_${index}`]}`,
  );
}

describe("separateRemoteCredentials", () => {
  it("keeps the password of an https URL out of the URL and sends it as a header for that URL", () => {
    const separated = separateRemoteCredentials(
      "https://ci:s3cret%2Ftoken@git.example:8443/a/b.git",
    );
    const encoded = Buffer.from("ci:s3cret/token").toString("base64");
    expect(separated.url).toBe("https://ci@git.example:8443/a/b.git");
    expect(configEntries(separated.environment)).toEqual([
      `http.https://git.example:8443/a/b.git.extraHeader=Authorization: Basic ${encoded}`,
      "credential.helper=",
    ]);
    expect(separated.environment?.GIT_TRACE_REDACT).toBe("1");
    expect(separated.secrets).toEqual(["s3cret%2Ftoken", "s3cret/token", encoded]);
  });

  it("gives back a URL without a password as it is, with nothing to send", () => {
    for (const url of [
      "https://github.com/acme/api.git",
      "https://oauth2@gitlab.example/acme/api.git",
      "git@github.com:acme/api.git",
      "file:///srv/git/api",
      "/srv/git/api",
    ]) {
      expect(separateRemoteCredentials(url)).toEqual({ url, environment: undefined, secrets: [] });
    }
  });

  it("drops a password git could not use (ssh) from the URL, and still names it a secret", () => {
    expect(separateRemoteCredentials("ssh://git:hunter22@host/a/b.git")).toEqual({
      url: "ssh://git@host/a/b.git",
      environment: undefined,
      secrets: ["hunter22"],
    });
  });

  it("never leaves any form of the password in the URL, and the header carries it whole", () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 1, maxLength: 30 }),
        fc.stringMatching(/^[a-z][a-z0-9-]{0,10}$/),
        (password, user) => {
          const written = encodeURIComponent(password);
          const url = `https://${user}:${written}@host.example/acme/api.git`;
          const separated = separateRemoteCredentials(url);
          expect(separated.url).toBe(`https://${user}@host.example/acme/api.git`);
          expect(separated.secrets).toContain(password);
          expect(separated.secrets).toContain(written);
          const header = configEntries(separated.environment)[0]!;
          const encoded = header.slice(header.indexOf("Basic ") + 6);
          expect(Buffer.from(encoded, "base64").toString()).toBe(`${user}:${password}`);
        },
      ),
    );
  });
});

describe("remoteUrlPasswords", () => {
  it("lists the written and the decoded form, longest first", () => {
    expect(remoteUrlPasswords("https://u:a%40b@host/x")).toEqual(["a%40b", "a@b"]);
    expect(remoteUrlPasswords("https://u@host/x")).toEqual([]);
    expect(remoteUrlPasswords("not a url")).toEqual([]);
  });
});
