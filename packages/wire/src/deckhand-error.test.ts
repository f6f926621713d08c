import { runInNewContext } from "node:vm";
import { describe, expect, it } from "vitest";
import { DeckhandError } from "./deckhand-error.ts";

type ParcelCode = "lost" | "late";

class ParcelError extends DeckhandError<ParcelCode> {
  // Typed `string` so a subclass may name itself differently.
  static override readonly errorName: string = "ParcelError";
}

class LateParcelError extends ParcelError {
  static override readonly errorName = "LateParcelError";
  readonly days: number;

  constructor(days: number) {
    super("late", `the parcel is ${days} days late`);
    this.days = days;
  }
}

class LetterError extends DeckhandError<"torn"> {
  static override readonly errorName = "LetterError";
}

describe("DeckhandError", () => {
  it("gives a package's error its code, message, cause and name", () => {
    const cause = new Error("disk full");
    const error = new ParcelError("lost", "the parcel is lost; ask the sender", { cause });
    expect(error).toBeInstanceOf(Error);
    expect(error).toBeInstanceOf(DeckhandError);
    expect(error).toBeInstanceOf(ParcelError);
    expect(error.code).toBe("lost");
    expect(error.message).toBe("the parcel is lost; ask the sender");
    expect(error.cause).toBe(cause);
    expect(error.name).toBe("ParcelError");
    expect(String(error)).toBe("ParcelError: the parcel is lost; ask the sender");
  });

  it("recognises an error of the class, of a subclass and of the base, and nothing else", () => {
    const parcel = new ParcelError("lost", "lost");
    const late = new LateParcelError(3);
    const letter = new LetterError("torn", "torn");
    expect(late.name).toBe("LateParcelError");
    expect(late.code).toBe("late");
    expect(ParcelError.isInstance(parcel)).toBe(true);
    expect(ParcelError.isInstance(late)).toBe(true);
    expect(LateParcelError.isInstance(late)).toBe(true);
    expect(LateParcelError.isInstance(parcel)).toBe(false);
    expect(ParcelError.isInstance(letter)).toBe(false);
    expect(LetterError.isInstance(parcel)).toBe(false);
    for (const error of [parcel, late, letter]) expect(DeckhandError.isInstance(error)).toBe(true);
    for (const value of [new Error("plain"), { code: "lost" }, "ParcelError", null, undefined, 7]) {
      expect(ParcelError.isInstance(value)).toBe(false);
      expect(DeckhandError.isInstance(value)).toBe(false);
    }
  });

  it("narrows the type of a recognised value", () => {
    const value: unknown = new LateParcelError(2);
    if (!LateParcelError.isInstance(value)) throw new Error("not recognised");
    // A compile-time check as much as a runtime one: `days` exists only on LateParcelError.
    expect(value.days).toBe(2);
  });

  it("keeps its markers out of enumeration, JSON and equality", () => {
    const error = new ParcelError("lost", "lost");
    expect(Object.getOwnPropertySymbols(error)).toHaveLength(2);
    expect(Object.keys(error).sort()).toEqual(["code", "name"]);
    expect(JSON.parse(JSON.stringify(error))).toEqual({ name: "ParcelError", code: "lost" });
    expect({ ...error }).toEqual({ name: "ParcelError", code: "lost" });
  });

  it("recognises an error from a second copy of the module, which instanceof does not", async () => {
    // A second evaluation of the same source, as two bundles or two installed versions give.
    const copy = (await import(
      /* @vite-ignore */ `./deckhand-error.ts?second-copy=${Date.now()}`
    )) as typeof import("./deckhand-error.ts");
    expect(copy.DeckhandError).not.toBe(DeckhandError);
    class CopiedParcelError extends copy.DeckhandError<ParcelCode> {
      static override readonly errorName = "ParcelError";
    }
    const error = new CopiedParcelError("late", "late");
    expect(error instanceof ParcelError).toBe(false);
    expect(error instanceof DeckhandError).toBe(false);
    expect(ParcelError.isInstance(error)).toBe(true);
    expect(DeckhandError.isInstance(error)).toBe(true);
    expect(LetterError.isInstance(error)).toBe(false);
    expect(CopiedParcelError.isInstance(new ParcelError("lost", "lost"))).toBe(true);
  });

  it("recognises an error made in another realm by its markers", () => {
    const foreign: unknown = runInNewContext(`
      const error = new Error("the parcel is lost");
      for (const key of ["deckhand.error", "deckhand.error.ParcelError"]) {
        Object.defineProperty(error, Symbol.for(key), { value: true });
      }
      error.name = "ParcelError";
      error.code = "lost";
      error;
    `);
    expect(foreign instanceof Error).toBe(false);
    expect(ParcelError.isInstance(foreign)).toBe(true);
    expect(DeckhandError.isInstance(foreign)).toBe(true);
    expect(LateParcelError.isInstance(foreign)).toBe(false);
    if (ParcelError.isInstance(foreign)) expect(foreign.code).toBe("lost");
    // A marker that is merely truthy is not the marker.
    const impostor = { [Symbol.for("deckhand.error.ParcelError")]: "yes" };
    expect(ParcelError.isInstance(impostor)).toBe(false);
  });
});
