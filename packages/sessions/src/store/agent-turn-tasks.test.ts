import { createDb, type DbHandle, tasks } from "@deckhand/db";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  AGENT_TURN_TASK,
  type AgentTurnPayload,
  AgentTurnPayloadSchema,
} from "./agent-turn-tasks.ts";
import { SessionStore } from "./session-store.ts";

let handle: DbHandle;
beforeAll(async () => {
  handle = await createDb();
});
afterAll(() => handle.close());

function payload(): AgentTurnPayload {
  return {
    session_id: crypto.randomUUID(),
    chat_id: crypto.randomUUID(),
    user_message_id: crypto.randomUUID(),
    agent: "claude",
  };
}

describe("SessionStore.turnTasks.enqueue", () => {
  it("queues the payload the runner's schema reads back, serialised per session", async () => {
    const turn = payload();
    const { id } = await new SessionStore(handle.db).turnTasks.enqueue(turn);
    const [row] = await handle.db.select().from(tasks).where(eq(tasks.id, id));
    expect(row).toMatchObject({
      type: AGENT_TURN_TASK,
      serialKey: `session:${turn.session_id}`,
      idempotencyKey: `${AGENT_TURN_TASK}:${turn.user_message_id}`,
    });
    expect(AgentTurnPayloadSchema.parse(row!.payload)).toEqual(turn);
  });

  it("queues one task per user message however often it is asked", async () => {
    const turn = payload();
    const first = await new SessionStore(handle.db).turnTasks.enqueue(turn);
    const second = await new SessionStore(handle.db).turnTasks.enqueue(turn);
    expect(second.id).toBe(first.id);
  });

  it("refuses a payload the runner would refuse, queueing nothing", async () => {
    const turn = { ...payload(), agent: "" };
    await expect(new SessionStore(handle.db).turnTasks.enqueue(turn)).rejects.toThrow();
    const queued = await handle.db
      .select()
      .from(tasks)
      .where(eq(tasks.idempotencyKey, `${AGENT_TURN_TASK}:${turn.user_message_id}`));
    expect(queued).toEqual([]);
  });
});
