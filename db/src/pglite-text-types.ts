import type { PGlite, QueryOptions, Transaction } from "@electric-sql/pglite";

/**
 * The types drizzle reads from PGlite as text, parsing them itself (timestamps, dates and
 * intervals, and arrays of them and of numerics): its PGlite session names these nine
 * pass-through parsers in the options of every statement it sends.
 */
const DRIZZLE_TEXT_TYPES = [1114, 1184, 1186, 1082, 1231, 1115, 1185, 1187, 1182] as const;

type Parser = (value: string) => unknown;
type Parsers = Record<number, Parser>;

/** What drizzle needs of its PGlite client: statements, and transactions of them. */
interface DrizzleFacingClient {
  query: PGlite["query"];
  transaction: PGlite["transaction"];
}

const asText: Parser = (value) => value;

/**
 * Gives drizzle its text types without a per-statement parser option: PGlite merges a
 * statement's `parsers` into a fresh copy of its whole table (over 300 entries) for every
 * result, which cost about 0.1 ms of a 0.3 ms insert, on every statement Deckhand sends.
 *
 * The database's own table is given drizzle's nine pass-through parsers once, and drizzle's
 * statements reach it without the option: the same parsing, without the copy. Deckhand's raw
 * statements (`DbHandle.query`) name PGlite's own parsers for those nine types, so they read
 * what they always read (dates as `Date`, as the PostgreSQL driver gives them).
 *
 * This is written here, not found in a library: the copy is inside PGlite's result parsing and
 * drizzle's PGlite driver always passes the option (drizzle-orm 0.45, PGlite 0.5).
 */
export class PgliteTextTypes {
  /** Options for a statement of Deckhand's own: PGlite's usual parsing of every type. */
  readonly rawOptions: QueryOptions;
  /** The client to give drizzle. */
  readonly forDrizzle: DrizzleFacingClient;

  constructor(client: PGlite) {
    const table = client.parsers as Parsers;
    this.rawOptions = {
      parsers: Object.fromEntries(
        DRIZZLE_TEXT_TYPES.map((typeId) => [typeId, table[typeId] ?? asText]),
      ),
    };
    client.parsers = {
      ...table,
      ...Object.fromEntries(DRIZZLE_TEXT_TYPES.map((typeId) => [typeId, asText])),
    };
    this.forDrizzle = {
      query: (text, params, options) => client.query(text, params, withoutParsers(options)),
      transaction: (callback) =>
        client.transaction((transaction) => callback(drizzleFacingTransaction(transaction))),
    };
  }
}

/** Drizzle's options for a statement, less the parsers now in the database's table. */
function withoutParsers(options: QueryOptions | undefined): QueryOptions | undefined {
  if (options?.parsers === undefined) return options;
  const { parsers: _inTheTable, ...rest } = options;
  return rest;
}

function drizzleFacingTransaction(transaction: Transaction): Transaction {
  return new Proxy(transaction, {
    get(target, property, receiver) {
      if (property === "query") {
        return ((text, params, options) =>
          target.query(text, params, withoutParsers(options))) as Transaction["query"];
      }
      const value = Reflect.get(target, property, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}
