/*
 * The base of every package's error type lives in @deckhand/wire because wire is the one leaf
 * every Deckhand package (and app) already depends on, and the base is a contract between them:
 * an error thrown by one package is recognised by another through `isInstance`. It adds no
 * dependency (plain JavaScript, no zod) and stays tree-shakeable (`sideEffects: false`), so wire
 * keeps being the small contracts package it is. @deckhand/errors holds the helpers that read
 * unknown thrown values (`errorMessage`, `errnoCode`); it does not own an error type.
 */

/** The marker every Deckhand error carries, whatever its package and copy. */
const BASE_MARKER = "deckhand.error";

function markerOf(errorName: string): symbol {
  // `Symbol.for` reads the registry every realm of the process shares, so a marker set by one
  // copy of a class (a second bundle, another version, a `vm` context) is found by another.
  return Symbol.for(
    errorName === DeckhandError.errorName ? BASE_MARKER : `${BASE_MARKER}.${errorName}`,
  );
}

type ErrorClass = (abstract new (
  ...args: never[]
) => DeckhandError) & { readonly errorName: string };

/**
 * The base of the one error type each Deckhand package throws. `code` is stable for callers to
 * branch on, the message is for people and may change. A package's error declares its code union
 * and its `errorName`, nothing else:
 *
 * ```ts
 * export class DbError extends DeckhandError<DbErrorCode> {
 *   static override readonly errorName = "DbError";
 * }
 * ```
 *
 * (A class that has subclasses types it `errorName: string` so they may name themselves.)
 *
 * `DbError.isInstance(value)` then recognises a DbError from any copy of the package, where
 * `instanceof` only recognises this copy's; `instanceof` keeps working as usual.
 */
export abstract class DeckhandError<Code extends string = string> extends Error {
  /**
   * The error's name and the key of its marker. Set explicitly rather than read from the class's
   * `name`, which a minifying bundler renames.
   */
  static readonly errorName: string = "DeckhandError";

  readonly code: Code;

  constructor(code: Code, message: string, options?: { cause?: unknown }) {
    super(message, options);
    const errorClass = new.target as unknown as ErrorClass;
    this.name = errorClass.errorName;
    this.code = code;
    // Every class in the chain marks the instance, so a PatchParseError is also recognised by
    // AgentBackendError.isInstance and DeckhandError.isInstance.
    for (
      let current: unknown = errorClass;
      typeof current === "function" && current !== Error;
      current = Object.getPrototypeOf(current)
    ) {
      if (Object.hasOwn(current, "errorName")) {
        // Not enumerable: the markers stay out of logs, JSON and deep-equality checks.
        Object.defineProperty(this, markerOf((current as ErrorClass).errorName), { value: true });
      }
    }
  }

  /**
   * Whether a value is an error of the class this is called on (`ProvidersError.isInstance(x)`)
   * or of a subclass, from this copy of the package or any other: it checks the marker, not the
   * prototype chain.
   */
  static isInstance<Class extends ErrorClass>(
    this: Class,
    value: unknown,
  ): value is InstanceType<Class> {
    if (typeof value !== "object" || value === null) return false;
    // biome-ignore lint/complexity/noThisInStatic: `this` is the class it is called on, a subclass included.
    return (value as Record<symbol, unknown>)[markerOf(this.errorName)] === true;
  }
}
