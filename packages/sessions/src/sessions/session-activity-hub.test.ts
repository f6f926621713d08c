// The session activity hub over PGlite: a stored event pushes the session to every subscriber,
// a notification that changes nothing pushes nothing, and frame ids continue from `afterId`.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createDb, type DbHandle } from "@deckhand/db";
import { createTempRepository, type TempRepository } from "@deckhand/testkit";
import type { SessionActivityEvent } from "@deckhand/wire";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSessionDomain, type SessionDomain } from "../session-domain.ts";
import { publishSessionEvent, SESSION_EVENTS_CHANNEL } from "../store/session-events.ts";
import { SessionActivityHub } from "./session-activity-hub.ts";

let database: DbHandle;
let scratch: string;
let repository: TempRepository;
let service: SessionDomain;
let hub: SessionActivityHub;

beforeAll(async () => {
  database = await createDb({ dataDir: "memory://" });
  scratch = mkdtempSync(join(tmpdir(), "deckhand-activity-hub-"));
  repository = createTempRepository({ "README.md": "# demo\n" });
  service = createSessionDomain({
    database,
    projectsDir: join(scratch, "projects"),
    worktreesDir: join(scratch, "worktrees"),
  });
  hub = new SessionActivityHub(database, {
    sessionsById: (ids) => service.sessions.byIds(ids),
    coalesceMs: 20,
  });
  await hub.start();
});

afterAll(async () => {
  await hub.stop();
  await database.close();
  repository.remove();
  rmSync(scratch, { recursive: true, force: true });
});

async function until(check: () => boolean): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((resolveWait) => setTimeout(resolveWait, 10));
  }
}

describe("SessionActivityHub", () => {
  it("pushes a session once per change to every subscriber, numbering frames from afterId", async () => {
    const project = await service.projects.create({ repository_path: repository.path });
    const session = await service.sessions.create(project.id, { title: "hub" });
    const other = await service.sessions.create(project.id, { title: "other" });
    const first: SessionActivityEvent[] = [];
    const second: SessionActivityEvent[] = [];
    let ready: number | null = null;
    const one = hub.subscribe({
      key: "",
      afterId: 0,
      deliver: (event) => void first.push(event),
      caughtUp: (lastEventId) => {
        ready = lastEventId;
      },
    });
    const two = hub.subscribe({
      key: "",
      afterId: 41,
      deliver: (event) => void second.push(event),
    });
    await until(() => ready !== null);
    expect(ready).toBe(0);

    const event = await publishSessionEvent(database.db, session.id, null, {
      type: "session_closed",
    });
    await until(() => first.length === 1 && second.length === 1);
    expect(first[0]).toMatchObject({ id: 1, session: { id: session.id, last_event_id: event.id } });
    expect(second[0]).toMatchObject({ id: 42, session: { id: session.id } });

    // Notified again with nothing changed: nothing is sent for it, while a change elsewhere is.
    await database.db.execute(sql`select pg_notify(${SESSION_EVENTS_CHANNEL}, ${session.id})`);
    await publishSessionEvent(database.db, other.id, null, { type: "session_closed" });
    await until(() => first.some((frame) => frame.session.id === other.id));
    expect(first.filter((frame) => frame.session.id === session.id)).toHaveLength(1);

    await service.sessions.update(session.id, { archived: true });
    await until(() => first.length === 3);
    expect(first[2]).toMatchObject({
      id: 3,
      session: { id: session.id, archived_at: expect.any(String) },
    });

    one.close();
    two.close();
    expect(hub.subscriberCount).toBe(0);
  });
});
