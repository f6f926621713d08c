import { createWriteStream, mkdirSync, type WriteStream } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { errnoCode } from "@deckhand/errors";
import { AgentEventSchema } from "@deckhand/wire";
import { z } from "zod";
import { AgentBackendError } from "../../errors.ts";
import { SubmissionSchema } from "./submission.ts";

/**
 * One line of a session recording. `seq` counts from 1 within a recording and `at` is the wall
 * clock; both are bookkeeping, to be ignored when comparing a replay with its original.
 */
export const RecordEntrySchema = z.discriminatedUnion("kind", [
  z.object({
    kind: z.literal("submission"),
    seq: z.number().int().positive(),
    at: z.iso.datetime(),
    id: z.string(),
    submission: SubmissionSchema,
  }),
  z.object({
    kind: z.literal("event"),
    seq: z.number().int().positive(),
    at: z.iso.datetime(),
    event: AgentEventSchema,
  }),
  /**
   * An item appended to the conversation the model sees (messages, tool calls, tool outputs):
   * what resuming a session rebuilds its history from, since events only carry what the UI shows.
   */
  z.object({
    kind: z.literal("item"),
    seq: z.number().int().positive(),
    at: z.iso.datetime(),
    item: z.looseObject({ type: z.string() }),
  }),
]);
export type RecordEntry = z.infer<typeof RecordEntrySchema>;

/** Where the native agent writes its submissions, events and conversation items. */
export interface SessionRecorder {
  /** Appends one entry; synchronous so entries keep their order without the agent waiting. */
  record(sessionId: string, entry: RecordEntry): void;
  /** The entries recorded for a session, oldest first; null when there is no recording. */
  load?(sessionId: string): Promise<RecordEntry[] | null>;
  /** The session is over for now: let go of what its recording holds (a file handle). */
  end?(sessionId: string): Promise<void>;
}

/** Parses a recording's JSONL text; a line that does not fit names its number. */
export function parseRecording(text: string): RecordEntry[] {
  const entries: RecordEntry[] = [];
  const lines = text.split("\n");
  for (const [index, line] of lines.entries()) {
    if (line.trim() === "") continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (error) {
      throw new AgentBackendError("internal", `recording line ${index + 1} is not JSON`, {
        cause: error,
      });
    }
    const parsed = RecordEntrySchema.safeParse(value);
    if (!parsed.success) {
      throw new AgentBackendError(
        "internal",
        `recording line ${index + 1} is not a record entry: ${z.prettifyError(parsed.error)}`,
        { cause: parsed.error },
      );
    }
    entries.push(parsed.data);
  }
  return entries;
}

/** Keeps recordings in memory: for tests, and for callers that persist entries themselves. */
export class MemorySessionRecorder implements SessionRecorder {
  readonly sessions = new Map<string, RecordEntry[]>();

  record(sessionId: string, entry: RecordEntry): void {
    const entries = this.sessions.get(sessionId) ?? [];
    this.sessions.set(sessionId, entries);
    // A copy, as a file would hold: what a caller reads back never aliases the agent's objects.
    entries.push(structuredClone(entry));
  }

  async load(sessionId: string): Promise<RecordEntry[] | null> {
    return this.sessions.get(sessionId)?.map((entry) => structuredClone(entry)) ?? null;
  }

  entries(sessionId: string): RecordEntry[] {
    return this.sessions.get(sessionId) ?? [];
  }
}

const SESSION_FILE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/**
 * Appends each session's entries as JSONL to `<dir>/<session id>.jsonl`, one open stream per
 * live session. Writes are buffered by the stream; `flush` and `end` wait for them.
 */
export class FileSessionRecorder implements SessionRecorder {
  readonly dir: string;
  readonly #streams = new Map<string, WriteStream>();
  readonly #failures = new Map<string, Error>();
  #madeDir = false;

  constructor(dir: string) {
    this.dir = dir;
  }

  /** The file a session is recorded in. */
  pathOf(sessionId: string): string {
    // The id becomes a file name: nothing that could climb out of the directory.
    if (!SESSION_FILE_NAME.test(sessionId)) {
      throw new AgentBackendError("internal", `not a usable session id: ${sessionId}`);
    }
    return join(this.dir, `${sessionId}.jsonl`);
  }

  record(sessionId: string, entry: RecordEntry): void {
    let stream = this.#streams.get(sessionId);
    if (stream === undefined) {
      // Synchronous, once: entries must not queue behind an asynchronous mkdir.
      if (!this.#madeDir) mkdirSync(this.dir, { recursive: true });
      this.#madeDir = true;
      stream = createWriteStream(this.pathOf(sessionId), { flags: "a" });
      // A full disk must not crash the agent: the failure surfaces on flush/end instead.
      stream.on("error", (error) => this.#failures.set(sessionId, error));
      this.#streams.set(sessionId, stream);
    }
    stream.write(`${JSON.stringify(entry)}\n`);
  }

  async load(sessionId: string): Promise<RecordEntry[] | null> {
    await this.flush(sessionId);
    let text: string;
    try {
      text = await readFile(this.pathOf(sessionId), "utf8");
    } catch (error) {
      if (errnoCode(error) === "ENOENT") return null;
      throw error;
    }
    return parseRecording(text);
  }

  /** Resolves once everything recorded so far for the session is on disk. */
  async flush(sessionId: string): Promise<void> {
    const stream = this.#streams.get(sessionId);
    if (stream !== undefined && !stream.destroyed) {
      await new Promise<void>((resolveFlush) => stream.write("", () => resolveFlush()));
    }
    this.#throwFailure(sessionId);
  }

  #throwFailure(sessionId: string): void {
    const failure = this.#failures.get(sessionId);
    if (failure === undefined) return;
    this.#failures.delete(sessionId);
    throw new AgentBackendError(
      "internal",
      `cannot record session ${sessionId}: ${failure.message}`,
      {
        cause: failure,
      },
    );
  }

  async end(sessionId: string): Promise<void> {
    const stream = this.#streams.get(sessionId);
    if (stream === undefined) return;
    this.#streams.delete(sessionId);
    if (!stream.destroyed) await new Promise<void>((resolveEnd) => stream.end(() => resolveEnd()));
    this.#throwFailure(sessionId);
  }

  /** Ends every session's stream. */
  async close(): Promise<void> {
    await Promise.all([...this.#streams.keys()].map((sessionId) => this.end(sessionId)));
  }
}
