import { createDb, type DbHandle } from "@deckhand/db";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DbPermissionMemory } from "./permission-memory.ts";

let database: DbHandle;
beforeAll(async () => {
  database = await createDb({ dataDir: "memory://" });
});
afterAll(async () => {
  await database.close();
});

describe("DbPermissionMemory", () => {
  it("keeps an always answer per (session, agent, tool kind) and replaces it when answered again", async () => {
    const [project] = (
      await database.query<{ id: string }>(
        "insert into projects (name, repository_path) values ('p', '/tmp/p') returning id",
      )
    ).rows;
    const [session] = (
      await database.query<{ id: string }>(
        "insert into sessions (project_id, branch) values ($1, 'b') returning id",
        [project!.id],
      )
    ).rows;
    const memory = new DbPermissionMemory(database.db);
    const key = { sessionId: session!.id, agent: "codex", toolKind: "edit" as const };
    expect(await memory.get(key)).toBeNull();
    await memory.set(key, "allow_always");
    expect(await memory.get(key)).toBe("allow_always");
    expect(await memory.get({ ...key, toolKind: "execute" })).toBeNull();
    expect(await memory.get({ ...key, agent: "claude" })).toBeNull();
    await memory.set(key, "reject_always");
    expect(await new DbPermissionMemory(database.db).get(key)).toBe("reject_always");

    // The native agent's answers for one command: apart from the kind's, whatever its length.
    const command = { ...key, toolKind: "execute" as const, subject: `touch ${"x".repeat(5000)}` };
    await memory.set(command, "allow_always");
    expect(await new DbPermissionMemory(database.db).get(command)).toBe("allow_always");
    expect(await memory.get({ ...command, subject: "touch y" })).toBeNull();
    expect(await memory.get({ ...key, toolKind: "execute" })).toBeNull();
  });
});
