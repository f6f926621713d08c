import { MODEL_TOKEN_PREFIX } from "@deckhand/wire";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { jsonSpellings, redactBytes } from "./redact-bytes.ts";
import { REDACTED, rememberSecrets } from "./redaction.ts";

const bytes = (text: string) => new TextEncoder().encode(text);
const text = (body: Uint8Array) => new TextDecoder().decode(body);

describe("redactBytes", () => {
  it("replaces every occurrence of each given secret and returns the body itself when none is there", () => {
    const secret = "sk-given-secret-0001";
    const { body, count } = redactBytes(bytes(`a ${secret} b ${secret}`), [secret]);
    expect(text(body)).toBe(`a ${REDACTED} b ${REDACTED}`);
    expect(count).toBe(2);
    const clean = bytes("nothing to hide here");
    expect(redactBytes(clean, [secret])).toEqual({ body: clean, count: 0 });
    expect(redactBytes(clean, [secret]).body).toBe(clean);
  });

  it("replaces secrets the process remembers and any scoped token, known or not", () => {
    const remembered = "remembered-for-bodies-0002";
    rememberSecrets([remembered]);
    const token = `${MODEL_TOKEN_PREFIX}${"Ab-_9".repeat(8)}xyz`;
    const { body } = redactBytes(bytes(`{"k":"${remembered}","t":"${token}"}`));
    expect(text(body)).toBe(`{"k":"${REDACTED}","t":"${REDACTED}"}`);
    // The prefix without a whole token after it is left alone.
    expect(text(redactBytes(bytes(`${MODEL_TOKEN_PREFIX}short`)).body)).toBe(
      `${MODEL_TOKEN_PREFIX}short`,
    );
  });

  it("finds a secret the way JSON writes it: escaped, escaped twice, and as \\u escapes", () => {
    const secret = 'p"a\\ss\tw\u00f6rd-0003';
    const once = JSON.stringify({ output: `env: SECRET=${secret}` });
    const twice = JSON.stringify({ arguments: once });
    const ascii = once.replace(/\u00f6/g, "\\u00f6");
    for (const body of [once, twice, ascii]) {
      const redacted = text(redactBytes(bytes(body), [secret]).body);
      expect(redacted).toContain(REDACTED);
      expect(redacted).not.toMatch(/w(\\u00f6|\u00f6)rd/);
    }
    // What stays is still JSON, with the marker where the secret was.
    expect(JSON.parse(text(redactBytes(bytes(once), [secret]).body))).toEqual({
      output: `env: SECRET=${REDACTED}`,
    });
  });

  it("merges overlapping secrets so no piece of either is left", () => {
    const { body, count } = redactBytes(bytes("xx abcdefgh-ijklmnop yy"), [
      "abcdefgh-ijk",
      "fgh-ijklmnop",
    ]);
    expect(text(body)).toBe(`xx ${REDACTED} yy`);
    expect(count).toBe(1);
  });

  it("leaves no spelling of a secret in any JSON document that holds it", () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 8, maxLength: 24, unit: "grapheme" }),
        fc.string({ maxLength: 20 }),
        (secret, around) => {
          // A secret made of the marker's own brackets or letters could reappear around it.
          fc.pre(!/[[\]]/.test(secret) && !REDACTED.includes(secret));
          const document = JSON.stringify({
            text: `${around}${secret}${around}`,
            nested: JSON.stringify({ value: secret }),
          });
          const redacted = text(redactBytes(bytes(document), [secret]).body);
          for (const spelling of jsonSpellings(secret)) {
            expect(redacted.includes(spelling)).toBe(false);
          }
        },
      ),
    );
  });

  it("searches a body of megabytes in milliseconds", () => {
    const secrets = Array.from({ length: 12 }, (_, index) => `secret-number-${index}-abcdefgh`);
    const filler = JSON.stringify({ role: "tool", content: "x".repeat(900) });
    const body = bytes(`[${Array.from({ length: 8_000 }, () => filler).join(",")}]`);
    const started = performance.now();
    const { count } = redactBytes(body, secrets);
    const elapsed = performance.now() - started;
    expect(count).toBe(0);
    expect(body.byteLength).toBeGreaterThan(7_000_000);
    // Generous for a loaded machine; it takes a few milliseconds.
    expect(elapsed).toBeLessThan(2_000);
  });
});
