import { WireEnv } from "@deckhand/wire";
import { describe, expect, it } from "vitest";
import { REDACTED, redactArgs, redactEnv, redactSecrets } from "./redaction.ts";

const token = "tok-3f9a.secret";

describe("redactEnv", () => {
  it("always redacts the model-provider token, and its value inside other variables", () => {
    const redacted = redactEnv({
      [WireEnv.modelProviderToken]: token,
      [WireEnv.jobId]: "job-1",
      CUSTOM_HEADERS: `Auth: Bearer ${token}`,
    });
    expect(redacted).toEqual({
      [WireEnv.modelProviderToken]: REDACTED,
      [WireEnv.jobId]: "job-1",
      CUSTOM_HEADERS: `Auth: Bearer ${REDACTED}`,
    });
  });

  it("redacts caller-marked secrets and leaves the rest", () => {
    expect(
      redactEnv(
        { GITHUB_TOKEN: "ghp_abcdefgh", NAME: "value", URL: "https://x:ghp_abcdefgh@host" },
        { secretNames: ["GITHUB_TOKEN"] },
      ),
    ).toEqual({ GITHUB_TOKEN: REDACTED, NAME: "value", URL: `https://x:${REDACTED}@host` });
  });

  it("does not turn an empty secret into a redaction of everything", () => {
    expect(redactEnv({ [WireEnv.modelProviderToken]: "", NAME: "value" })).toEqual({
      [WireEnv.modelProviderToken]: REDACTED,
      NAME: "value",
    });
  });
});

describe("redactArgs", () => {
  it("redacts -e NAME=value arguments of the token and of marked secrets", () => {
    const args = [
      "run",
      "-e",
      `${WireEnv.modelProviderToken}=${token}`,
      "-e",
      `${WireEnv.jobId}=job-1`,
      `--env=API_KEY=k-123`,
      "-e",
      `NOT_${WireEnv.modelProviderToken}=visible`,
      "image",
    ];
    expect(redactArgs(args, { secretNames: ["API_KEY"] })).toEqual([
      "run",
      "-e",
      `${WireEnv.modelProviderToken}=${REDACTED}`,
      "-e",
      `${WireEnv.jobId}=job-1`,
      `--env=API_KEY=${REDACTED}`,
      "-e",
      `NOT_${WireEnv.modelProviderToken}=visible`,
      "image",
    ]);
  });

  it("redacts secret values inside longer arguments, including values learnt from NAME=value", () => {
    const args = [
      "-e",
      `${WireEnv.modelProviderToken}=${token}`,
      "sh",
      "-c",
      `curl -H 'Authorization: Bearer ${token}' https://example.com`,
    ];
    expect(redactArgs(args)).toEqual([
      "-e",
      `${WireEnv.modelProviderToken}=${REDACTED}`,
      "sh",
      "-c",
      `curl -H 'Authorization: Bearer ${REDACTED}' https://example.com`,
    ]);
    expect(redactArgs([`x${token}y`], { secretValues: [token] })).toEqual([`x${REDACTED}y`]);
  });

  it("replaces the longest secret first so none leaks in pieces", () => {
    expect(redactSecrets("abcdefgh-abcdefghij", ["abcdefgh", "abcdefghij"])).toBe(
      `${REDACTED}-${REDACTED}`,
    );
  });
});
