import { type AgentEvent, collectParts, type Message, type SessionEvent } from "@deckhand/wire";
import { describe, expect, it } from "vitest";
import { SessionModel } from "./session-model.ts";

const CHAT = "00000000-0000-4000-8000-000000000001";
const MESSAGE = "00000000-0000-4000-8000-000000000002";
const USER_MESSAGE = "00000000-0000-4000-8000-000000000003";
const SESSION = "00000000-0000-4000-8000-000000000004";

let nextId = 1;
function sessionEvent(event: SessionEvent["event"]): SessionEvent {
  return {
    id: nextId++,
    session_id: SESSION,
    chat_id: CHAT,
    created_at: "2026-01-01T00:00:00.000Z",
    event,
  };
}

/** Resolves once the model has told its listeners (it does so once per frame). */
function changed(model: SessionModel): Promise<void> {
  return new Promise((resolve) => {
    const unsubscribe = model.subscribe(() => {
      unsubscribe();
      resolve();
    });
  });
}

const agentEvents: AgentEvent[] = [
  { type: "reasoning", message_id: MESSAGE, delta: "thinking" },
  { type: "text", message_id: MESSAGE, delta: "Hello" },
  { type: "text", message_id: MESSAGE, delta: ", world" },
  {
    type: "tool_call",
    message_id: MESSAGE,
    tool_call_id: "call-1",
    title: "Edit a.txt",
    kind: "edit",
    status: "pending",
  },
  {
    type: "permission_request",
    message_id: MESSAGE,
    request_id: "request-1",
    tool_call_id: "call-1",
    title: "Edit a.txt?",
    options: [{ option_id: "yes", name: "Allow", kind: "allow_once" }],
  },
  { type: "tool_update", message_id: MESSAGE, tool_call_id: "call-1", status: "completed" },
  { type: "text", message_id: MESSAGE, delta: "done" },
] as AgentEvent[];

describe("SessionModel", () => {
  it("rebuilds a streaming message with the parts the server's PartCollector stores", async () => {
    const model = new SessionModel(CHAT);
    model.apply(
      sessionEvent({
        type: "turn_started",
        chat_id: CHAT,
        message_id: MESSAGE,
        user_message_id: USER_MESSAGE,
        agent: "scripted",
      }),
    );
    for (const event of agentEvents) model.apply(sessionEvent(event as SessionEvent["event"]));
    await changed(model);
    const [message] = model.messages();
    expect(message?.status).toBe("streaming");
    expect(message?.parts).toEqual(collectParts(agentEvents));
    expect(model.permissions.has("request-1")).toBe(true);
  });

  it("replaces only the parts an event changed, and tells listeners once per frame", async () => {
    const model = new SessionModel(CHAT);
    let notified = 0;
    model.subscribe(() => {
      notified += 1;
    });
    model.apply(
      sessionEvent({
        type: "turn_started",
        chat_id: CHAT,
        message_id: MESSAGE,
        user_message_id: USER_MESSAGE,
        agent: "scripted",
      }),
    );
    for (const event of agentEvents.slice(0, 4))
      model.apply(sessionEvent(event as SessionEvent["event"]));
    await changed(model);
    expect(notified).toBe(1);
    const before = model.messages()[0]!.parts;
    model.apply(
      sessionEvent({
        type: "tool_update",
        message_id: MESSAGE,
        tool_call_id: "call-1",
        status: "in_progress",
      } as SessionEvent["event"]),
    );
    await changed(model);
    const after = model.messages()[0]!.parts;
    expect(after[0]).toBe(before[0]);
    expect(after[1]).toBe(before[1]);
    expect(after[2]).not.toBe(before[2]);
    expect(after[2]).toMatchObject({ kind: "tool_call", content: { status: "in_progress" } });
  });

  it("keeps the objects of stored messages and parts that a refetch did not change", async () => {
    const model = new SessionModel(CHAT);
    const stored = (text: string): Message => ({
      id: MESSAGE,
      chat_id: CHAT,
      role: "assistant",
      agent: "scripted",
      status: "complete",
      error: null,
      created_at: "2026-01-01T00:00:00.000Z",
      completed_at: "2026-01-01T00:00:01.000Z",
      parts: [
        { position: 0, kind: "text", content: { text: "same" } },
        { position: 1, kind: "text", content: { text } },
      ],
    });
    model.setStoredMessages([stored("first")]);
    await changed(model);
    const before = model.messages()[0]!;
    model.setStoredMessages([stored("first")]);
    await changed(model);
    expect(model.messages()[0]).toBe(before);
    model.setStoredMessages([stored("second")]);
    await changed(model);
    const after = model.messages()[0]!;
    expect(after).not.toBe(before);
    expect(after.parts[0]).toBe(before.parts[0]);
    expect(after.parts[1]).toMatchObject({ content: { text: "second" } });
  });
});
