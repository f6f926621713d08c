import { chats, createDb, type DbHandle, EventFeedHub, projects, sessions } from "@deckhand/db";
import {
  createPostgresTestDatabase,
  type PostgresTestDatabase,
  testPostgresUrl,
} from "@deckhand/testkit";
import type { SessionEvent } from "@deckhand/wire";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  publishSessionEvent,
  readSessionEvents,
  SESSION_EVENTS_CHANNEL,
  SessionEventWriter,
  sessionEventsNotice,
} from "./session-events.ts";

let handle: DbHandle;
let sessionId: string;

// One database for the file (migrations are the slow part); a fresh session per test.
beforeAll(async () => {
  handle = await createDb();
});
afterAll(() => handle.close());

let restoreTransaction: (() => void) | undefined;
beforeEach(async () => {
  restoreTransaction?.();
  const original = handle.db.transaction;
  restoreTransaction = () => {
    handle.db.transaction = original;
  };
  const [project] = await handle.db
    .insert(projects)
    .values({ name: "demo", repositoryPath: "/nowhere" })
    .returning();
  const [session] = await handle.db
    .insert(sessions)
    .values({ projectId: project!.id, branch: "deckhand/demo" })
    .returning();
  sessionId = session!.id;
});

const text = (index: number) => ({
  type: "text" as const,
  message_id: "7c0e8b52-3f0a-4a55-9a53-4b8a7a0f0c11",
  delta: String(index),
});

const deltasOf = async () =>
  (await readSessionEvents(handle.db, sessionId, 0, 10_000)).map((event) =>
    event.event.type === "text" ? Number(event.event.delta) : -1,
  );

describe("SessionEventWriter", () => {
  it("stores every appended event once, in append order, in fewer transactions than events", async () => {
    const writer = new SessionEventWriter(handle.db, sessionId);
    let transactions = 0;
    const transaction = handle.db.transaction.bind(handle.db);
    handle.db.transaction = ((...args: Parameters<typeof transaction>) => {
      transactions += 1;
      return transaction(...args);
    }) as typeof transaction;
    for (let index = 0; index < 1_000; index += 1) await writer.append(null, text(index));
    await writer.flush();
    expect(await deltasOf()).toEqual(Array.from({ length: 1_000 }, (_, index) => index));
    // Appends that come while a write is in flight share the next transaction.
    expect(transactions).toBeLessThan(100);
  });

  it("makes a caller wait once it is more than the high-water mark ahead of the database", async () => {
    // Writes wait for the test to open the gate, so "ahead of the database" is deterministic.
    let openGate!: () => void;
    const gate = new Promise<void>((resolveGate) => {
      openGate = resolveGate;
    });
    const transaction = handle.db.transaction.bind(handle.db);
    handle.db.transaction = (async (...args: Parameters<typeof transaction>) => {
      await gate;
      return transaction(...args);
    }) as typeof transaction;
    const writer = new SessionEventWriter(handle.db, sessionId, { highWaterMark: 3, maxBatch: 2 });
    const resolved: number[] = [];
    const appends = [0, 1, 2, 3, 4, 5].map((index) =>
      writer.append(null, text(index)).then(() => resolved.push(index)),
    );
    await new Promise((resolveLater) => setTimeout(resolveLater, 50));
    // 0 went out alone in the first (held) write; 1..3 fit under the mark; 4 and 5 do not.
    expect(resolved).toEqual([0, 1, 2, 3]);
    openGate();
    await Promise.all(appends);
    await writer.flush();
    expect(resolved).toEqual([0, 1, 2, 3, 4, 5]);
    expect(await deltasOf()).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it("reports a failed write from flush and from later appends, and stores nothing after it", async () => {
    const writer = new SessionEventWriter(handle.db, "00000000-0000-4000-8000-000000000000");
    await writer.append(null, text(1));
    await expect(writer.flush()).rejects.toThrow();
    await expect(writer.append(null, text(2))).rejects.toThrow();
    expect(await deltasOf()).toEqual([]);
  });
});

describe("publishSessionEvent", () => {
  it("stores the event in one statement of its own, with no explicit transaction", async () => {
    const transaction = handle.db.transaction.bind(handle.db);
    let transactions = 0;
    handle.db.transaction = ((...args: Parameters<typeof transaction>) => {
      transactions += 1;
      return transaction(...args);
    }) as typeof transaction;
    const execute = handle.db.execute.bind(handle.db);
    let statements = 0;
    handle.db.execute = ((...args: Parameters<typeof execute>) => {
      statements += 1;
      return execute(...args);
    }) as typeof execute;
    try {
      const published = await publishSessionEvent(handle.db, sessionId, null, text(7));
      expect({ transactions, statements }).toEqual({ transactions: 0, statements: 1 });
      expect(await readSessionEvents(handle.db, sessionId, 0)).toEqual([published]);
      expect(published).toMatchObject({ session_id: sessionId, chat_id: null, event: text(7) });
      expect(Number.isInteger(published.id)).toBe(true);
      expect(new Date(published.created_at).toISOString()).toBe(published.created_at);
    } finally {
      handle.db.execute = execute;
    }
  });
});

const backends = [
  { name: "pglite", postgres: false },
  ...(testPostgresUrl ? [{ name: "postgresql", postgres: true }] : []),
];

describe.each(backends)("session events on $name", ({ postgres }) => {
  let writers: DbHandle[];
  let database: PostgresTestDatabase | undefined;

  beforeAll(async () => {
    database = postgres ? await createPostgresTestDatabase() : undefined;
    // On PostgreSQL two handles, so appends really race on separate connections.
    writers = database
      ? [
          await createDb({ databaseUrl: database.url }),
          await createDb({ databaseUrl: database.url }),
        ]
      : [handle];
  });
  afterAll(async () => {
    if (database) for (const writer of writers) await writer.close();
    await database?.drop();
  });

  it("commits concurrent appends to one session in id order: a reader never finds an id behind one it saw", async () => {
    const [first] = writers;
    const [project] = await first!.db
      .insert(projects)
      .values({ name: "race", repositoryPath: "/nowhere" })
      .returning();
    const [session] = await first!.db
      .insert(sessions)
      .values({ projectId: project!.id, branch: "deckhand/race" })
      .returning();
    const raced = session!.id;
    const count = 200;
    let done = false;
    const seen: number[] = [];
    const reading = (async () => {
      let cursor = 0;
      for (;;) {
        // Once every append is stored, one more read reaches the end.
        const last = done;
        const events: SessionEvent[] = await readSessionEvents(first!.db, raced, cursor);
        for (const event of events) seen.push(event.id);
        cursor = events.at(-1)?.id ?? cursor;
        if (last && events.length === 0) break;
      }
    })();
    await Promise.all(
      Array.from({ length: count }, (_, index) =>
        index % 3 === 0
          ? (async () => {
              const writer = new SessionEventWriter(writers[index % writers.length]!.db, raced);
              await writer.append(null, text(index));
              await writer.flush();
            })()
          : publishSessionEvent(writers[index % writers.length]!.db, raced, null, text(index)),
      ),
    );
    done = true;
    await reading;
    const stored = (await readSessionEvents(first!.db, raced, 0)).map((event) => event.id);
    expect(stored).toHaveLength(count);
    // Read while appends committed, the ids came in the order they are stored in: none late.
    expect(seen).toEqual(stored);
  });
  /** A new session on the first handle. */
  const newSession = async (name: string) => {
    const [project] = await writers[0]!.db
      .insert(projects)
      .values({ name, repositoryPath: "/nowhere" })
      .returning();
    const [session] = await writers[0]!.db
      .insert(sessions)
      .values({ projectId: project!.id, branch: `deckhand/${name}` })
      .returning();
    return session!.id;
  };

  /** The session stream's fan-out on the first handle, counting the reads it makes. */
  const startFeed = async () => {
    const feed = { reads: 0 };
    const hub = new EventFeedHub<SessionEvent>(writers[0]!, {
      channel: SESSION_EVENTS_CHANNEL,
      read: (executor, key, afterId, limit) => {
        feed.reads += 1;
        return readSessionEvents(executor, key, afterId, limit);
      },
      notice: sessionEventsNotice,
      pollIntervalMs: 60_000,
    });
    await hub.start();
    return { hub, feed };
  };

  const until = async (check: () => boolean) => {
    const deadline = Date.now() + 60_000;
    while (!check()) {
      if (Date.now() > deadline) throw new Error("condition not met in 60 s");
      await new Promise((resolveWait) => setTimeout(resolveWait, 5));
    }
  };

  it("fans out every event of racing appends once, in order, as the log reads them", async () => {
    const raced = await newSession("fan-out-race");
    const { hub } = await startFeed();
    const delivered: SessionEvent[] = [];
    let caughtUp = false;
    const subscription = hub.subscribe({
      key: raced,
      afterId: 0,
      deliver: (event) => {
        delivered.push(event);
      },
      caughtUp: () => {
        caughtUp = true;
      },
    });
    try {
      await until(() => caughtUp);
      const count = 120;
      await Promise.all(
        Array.from({ length: count }, (_, index) =>
          index % 3 === 0
            ? (async () => {
                const writer = new SessionEventWriter(writers[index % writers.length]!.db, raced);
                await writer.append(null, text(index));
                await writer.append(null, text(index + 1_000));
                await writer.flush();
              })()
            : publishSessionEvent(writers[index % writers.length]!.db, raced, null, text(index)),
        ),
      );
      const stored = await readSessionEvents(writers[0]!.db, raced, 0);
      await until(() => delivered.length >= stored.length);
      expect(delivered).toEqual(stored);
    } finally {
      subscription.close();
      await hub.stop();
    }
  });

  it("puts the rows in an append's notice only while a stream of this process follows the session", async () => {
    const followed = await newSession("notice-followed");
    const payloads: string[] = [];
    const unlisten = await writers[0]!.listen(SESSION_EVENTS_CHANNEL, (payload) => {
      if (sessionEventsNotice(payload).key === followed) payloads.push(payload);
    });
    const { hub } = await startFeed();
    try {
      // Nobody follows it: building the rows' JSON would be paid for nothing.
      await publishSessionEvent(writers[0]!.db, followed, null, text(1));
      await until(() => payloads.length === 1);
      expect(payloads[0]).toBe(followed);

      let caughtUp = false;
      const subscription = hub.subscribe({
        key: followed,
        afterId: 0,
        deliver: () => {},
        caughtUp: () => {
          caughtUp = true;
        },
      });
      await until(() => caughtUp);
      const published = await publishSessionEvent(writers[0]!.db, followed, null, text(2));
      await until(() => payloads.length === 2);
      expect(sessionEventsNotice(payloads[1]!).events).toEqual([published]);

      subscription.close();
      await publishSessionEvent(writers[0]!.db, followed, null, text(3));
      await until(() => payloads.length === 3);
      expect(payloads[2]).toBe(followed);
    } finally {
      await unlisten();
      await hub.stop();
    }
  });

  it("hands a live stream the rows an append's notice carries, without reading the log", async () => {
    const quiet = await newSession("fan-out-notice");
    await publishSessionEvent(writers[0]!.db, quiet, null, text(-1));
    const [chat] = await writers[0]!.db.insert(chats).values({ sessionId: quiet }).returning();
    const { hub, feed } = await startFeed();
    const delivered: SessionEvent[] = [];
    let caughtUp = false;
    const subscription = hub.subscribe({
      key: quiet,
      afterId: 0,
      deliver: (event) => {
        delivered.push(event);
      },
      caughtUp: () => {
        caughtUp = true;
      },
    });
    try {
      await until(() => caughtUp && delivered.length === 1);
      const readsCaughtUp = feed.reads;
      const writer = new SessionEventWriter(writers[0]!.db, quiet);
      for (let index = 0; index < 5; index += 1) {
        await publishSessionEvent(writers[0]!.db, quiet, chat!.id, text(index));
        await writer.append(null, text(index + 10));
        await writer.append(null, text(index + 20));
        await writer.flush();
      }
      // Too large to ride in a notice: the stream reads it.
      await publishSessionEvent(writers[0]!.db, quiet, null, {
        ...text(99),
        delta: "x".repeat(9_000),
      });
      const stored = await readSessionEvents(writers[0]!.db, quiet, 0);
      await until(() => delivered.length >= stored.length);
      expect(delivered).toEqual(stored);
      expect(feed.reads - readsCaughtUp).toBe(1);
    } finally {
      subscription.close();
      await hub.stop();
    }
  });
});
