import { MODEL_TOKEN_PREFIX } from "@deckhand/wire";
import { describe, expect, it } from "vitest";
import { REDACTED, redactSecrets } from "./redaction.ts";

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
