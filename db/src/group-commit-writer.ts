// Writes entries of an append-only log in the order they are appended, with group commit: entries
// that arrive while a write is in flight go into the next transaction together. A producer that
// streams thousands of small entries (an agent's deltas, a step's output) thus costs one
// transaction per batch, not per entry, and waits for the database only when it runs
// `highWaterMark` entries ahead. Session events and batch-run events are both written with it.
import type { Database, Transaction } from "./client.ts";

export interface GroupCommitWriterOptions {
  /** Most entries written in one transaction. Default 500. */
  maxBatch?: number;
  /**
   * How many entries may wait unwritten before `append` makes its caller wait for the database:
   * back-pressure for a producer faster than the database. Default 2,000.
   */
  highWaterMark?: number;
}

/**
 * `flush` resolves once everything appended is stored and rejects with the first write error;
 * the entries of a failed batch are not retried, and every later `append` rejects with it too.
 */
export class GroupCommitWriter<Entry> {
  readonly #db: Database;
  readonly #write: (transaction: Transaction, batch: Entry[]) => Promise<void>;
  readonly #maxBatch: number;
  readonly #highWaterMark: number;
  #queue: Entry[] = [];
  #writing: Promise<void> | null = null;
  #failure: unknown = null;
  #drained: (() => void)[] = [];

  constructor(
    db: Database,
    write: (transaction: Transaction, batch: Entry[]) => Promise<void>,
    options: GroupCommitWriterOptions = {},
  ) {
    this.#db = db;
    this.#write = write;
    this.#maxBatch = options.maxBatch ?? 500;
    this.#highWaterMark = options.highWaterMark ?? 2_000;
  }

  /**
   * Queues entries; waits only when the queue is past its high-water mark. Entries appended in
   * one call go into one transaction (a write starts with what is queued when it starts).
   */
  async append(...entries: Entry[]): Promise<void> {
    if (this.#failure !== null) throw this.#failure;
    this.#queue.push(...entries);
    this.#writing ??= this.#writeAll();
    if (this.#queue.length > this.#highWaterMark) {
      await new Promise<void>((resolveDrained) => this.#drained.push(resolveDrained));
      if (this.#failure !== null) throw this.#failure;
    }
  }

  /** Resolves when every appended entry is stored; rejects if a write failed. */
  async flush(): Promise<void> {
    while (this.#writing) await this.#writing;
    if (this.#failure !== null) throw this.#failure;
  }

  async #writeAll(): Promise<void> {
    try {
      while (this.#queue.length > 0 && this.#failure === null) {
        const batch = this.#queue.splice(0, this.#maxBatch);
        try {
          await this.#db.transaction((transaction) => this.#write(transaction, batch));
        } catch (error) {
          this.#failure = error;
          this.#queue = [];
        }
        if (this.#queue.length <= this.#highWaterMark) {
          for (const resolveDrained of this.#drained.splice(0)) resolveDrained();
        }
      }
    } finally {
      for (const resolveDrained of this.#drained.splice(0)) resolveDrained();
      this.#writing = null;
    }
  }
}
