import { createDb } from "@deckhand/db";
import {
  createPostgresTestDatabase,
  type PostgresTestDatabase,
  testPostgresUrl,
} from "@deckhand/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { DatabaseStepCache } from "./database-step-cache.ts";
import { type CachedStepResult, MemoryStepCache, type StepCache } from "./step-cache.ts";

const result: CachedStepResult = {
  stepIndex: 2,
  exitCode: 0,
  diff: "diff --git a/README.md b/README.md\n",
  files: [{ path: "README.md", status: "modified", insertions: 1, deletions: 0 }],
  outputs: { answer: { nested: [1, "two", null] }, text: "plain" },
  stdout: "out\n",
  stderr: "err\n",
};

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function pglite(): Promise<StepCache> {
  const handle = await createDb({ dataDir: "memory://" });
  cleanups.push(() => handle.close());
  return new DatabaseStepCache(handle.db);
}

async function postgres(): Promise<{ cache: StepCache; url: string }> {
  const database: PostgresTestDatabase = await createPostgresTestDatabase();
  cleanups.push(() => database.drop());
  const handle = await createDb({ databaseUrl: database.url, poolSize: 2 });
  cleanups.push(() => handle.close());
  return { cache: new DatabaseStepCache(handle.db), url: database.url };
}

const caches: [string, () => Promise<StepCache>][] = [
  ["in memory", async () => new MemoryStepCache()],
  ["in PGlite", pglite],
];
if (testPostgresUrl !== undefined) {
  caches.push(["in PostgreSQL", async () => (await postgres()).cache]);
} else {
  it.skip("the database step cache on PostgreSQL (set DATABASE_URL)", () => {});
}

describe.each(caches)("a step cache %s", (_name, open) => {
  it("misses an unknown key and returns what was put under a known one", async () => {
    const cache = await open();
    expect(await cache.get("missing")).toBeUndefined();
    await cache.put("key", result);
    expect(await cache.get("key")).toEqual(result);
  });

  it("finds the newest of several keys that is cached, and where it is among them", async () => {
    const cache = await open();
    expect(await cache.newest!([])).toBeUndefined();
    expect(await cache.newest!(["a", "b", "c"])).toBeUndefined();
    await cache.put("a", { ...result, stepIndex: 0 });
    await cache.put("b", { ...result, stepIndex: 1 });
    expect(await cache.newest!(["a", "b", "c"])).toEqual({
      position: 1,
      result: { ...result, stepIndex: 1 },
    });
    // Positions order as numbers (10 after 9), and a key given twice is at its last place.
    const keys = [..."abcdefghi"].map((key) => `x${key}`);
    expect((await cache.newest!([...keys, "b", "a"]))?.position).toBe(10);
    expect((await cache.newest!(["a", "zz", "a", "zz"]))?.position).toBe(2);
  });

  it("replaces the result when the same key is put again", async () => {
    const cache = await open();
    await cache.put("key", result);
    await cache.put("key", { ...result, stdout: "second\n", outputs: {} });
    expect(await cache.get("key")).toEqual({ ...result, stdout: "second\n", outputs: {} });
  });

  it("hands out copies, so changing a returned result does not change the cache", async () => {
    const cache = await open();
    await cache.put("key", result);
    const first = (await cache.get("key"))!;
    first.files.push({ path: "other", status: "added", insertions: 0, deletions: 0 });
    expect(await cache.get("key")).toEqual(result);
  });
});

describe("the database step cache", () => {
  it.runIf(testPostgresUrl !== undefined)(
    "is shared by executors with their own connections to one database",
    async () => {
      const { url } = await postgres();
      const [first, second] = await Promise.all([
        createDb({ databaseUrl: url, poolSize: 1 }),
        createDb({ databaseUrl: url, poolSize: 1 }),
      ]);
      cleanups.push(
        () => first!.close(),
        () => second!.close(),
      );
      await new DatabaseStepCache(first!.db).put("shared", result);
      expect(await new DatabaseStepCache(second!.db).get("shared")).toEqual(result);
    },
  );
});
