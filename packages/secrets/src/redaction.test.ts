import { MODEL_TOKEN_PREFIX } from "@deckhand/wire";
import { describe, expect, it } from "vitest";
import {
  looksLikeSecretName,
  REDACTED,
  redactSecrets,
  redactValue,
  rememberSecrets,
} from "./redaction.ts";

describe("redactSecrets", () => {
  it("replaces every occurrence of each known secret", () => {
    expect(redactSecrets("key sk-abcdefgh and again sk-abcdefgh.", ["sk-abcdefgh"])).toBe(
      `key ${REDACTED} and again ${REDACTED}.`,
    );
  });

  it("replaces anything shaped like a scoped token even when its value is not given", () => {
    const token = `${MODEL_TOKEN_PREFIX}${"x".repeat(43)}`;
    expect(redactSecrets(`Bearer ${token}`)).toBe(`Bearer ${REDACTED}`);
  });

  it("replaces the longer of two overlapping secrets whole", () => {
    expect(redactSecrets("secret-value-long", ["secret-value", "secret-value-long"])).toBe(
      REDACTED,
    );
  });

  it("ignores secrets too short to be real", () => {
    expect(redactSecrets("a b c", ["a", "", undefined])).toBe("a b c");
  });
});

describe("rememberSecrets", () => {
  it("makes every later redaction replace the remembered value, without being passed it", () => {
    const value = "remembered-process-secret-1234";
    expect(redactSecrets(`x ${value} y`)).toBe(`x ${value} y`);
    rememberSecrets([value, "short", null, undefined]);
    expect(redactSecrets(`x ${value} y`)).toBe(`x ${REDACTED} y`);
    expect(redactValue({ list: [`${value}!`], count: 3 })).toEqual({
      list: [`${REDACTED}!`],
      count: 3,
    });
    // Too short to search for, so not remembered either.
    expect(redactSecrets("short and sweet")).toBe("short and sweet");
  });
});

describe("redactValue", () => {
  it("redacts every string of a JSON-like value and flattens errors, keeping the shape", () => {
    const secret = "sk-value-in-a-field-0001";
    const error = new Error(`failed with ${secret}`, { cause: new Error("underneath") });
    expect(
      redactValue({ a: secret, b: [1, { c: `key=${secret}` }], e: error, n: null }, [secret]),
    ).toEqual({
      a: REDACTED,
      b: [1, { c: `key=${REDACTED}` }],
      e: `Error: failed with ${REDACTED} <- Error: underneath`,
      n: null,
    });
  });
});

describe("looksLikeSecretName", () => {
  it("recognises credential names and leaves ordinary ones", () => {
    for (const name of ["GITHUB_TOKEN", "api_key", "DB_PASSWORD", "AWS_SECRET", "X_AUTH"]) {
      expect(looksLikeSecretName(name), name).toBe(true);
    }
    for (const name of ["PATH", "HOME", "LANG", "NODE_ENV"]) {
      expect(looksLikeSecretName(name), name).toBe(false);
    }
  });
});
