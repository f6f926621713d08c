import { readFile } from "node:fs/promises";
import { describe, expect, it } from "vitest";
import { errnoCode, errorMessage } from "./error-values.ts";

describe("errorMessage", () => {
  it("gives an Error's message without its name or stack", () => {
    expect(errorMessage(new TypeError("bad value"))).toBe("bad value");
  });

  it("gives anything else thrown as a string", () => {
    expect(errorMessage("plain text")).toBe("plain text");
    expect(errorMessage(42)).toBe("42");
    expect(errorMessage(undefined)).toBe("undefined");
    expect(errorMessage(null)).toBe("null");
  });
});

describe("errnoCode", () => {
  it("gives the errno code of a failed file-system call", async () => {
    const error = await readFile("/nonexistent/deckhand-errors-test").catch((caught) => caught);
    expect(errnoCode(error)).toBe("ENOENT");
  });

  it("gives a library's string code on an Error", () => {
    expect(errnoCode(Object.assign(new Error("x"), { code: "ERR_SOMETHING" }))).toBe(
      "ERR_SOMETHING",
    );
  });

  it("is undefined for an Error without a code, a numeric code, or a thrown non-Error", () => {
    expect(errnoCode(new Error("no code"))).toBeUndefined();
    expect(errnoCode(Object.assign(new Error("exit"), { code: 1 }))).toBeUndefined();
    expect(errnoCode({ code: "ENOENT" })).toBeUndefined();
    expect(errnoCode("ENOENT")).toBeUndefined();
    expect(errnoCode(null)).toBeUndefined();
  });
});
