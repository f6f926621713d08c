import { describe, expect, it } from "vitest";
import { decidePermission, type PermissionOutcome } from "./permission-gate.ts";
import {
  createInMemoryPermissionMemory,
  type PermissionMemory,
  type PermissionMemoryKey,
} from "./permission-memory.ts";

const key: PermissionMemoryKey = { sessionId: "session-1", agent: "claude", toolKind: "edit" };

/** An ask that answers `outcome` and counts its calls. */
function answering(outcome: PermissionOutcome) {
  const ask = async () => {
    ask.calls += 1;
    return outcome;
  };
  ask.calls = 0;
  return ask;
}

function recordingLogger() {
  const lines: { message: string; fields: Record<string, unknown> | undefined }[] = [];
  return {
    lines,
    warn(message: string, fields?: Record<string, unknown>) {
      lines.push({ message, fields });
    },
  };
}

describe("decidePermission", () => {
  it("answers from a remembered always-answer without asking", async () => {
    const memory = createInMemoryPermissionMemory();
    await memory.set(key, "allow_always");
    const ask = answering("reject_once");
    const decision = await decidePermission({ memory, key, ask });
    expect(decision).toEqual({ outcome: "allow_always", remembered: true });
    expect(ask.calls).toBe(0);
  });

  it("asks when the remembered answer is not usable for this request", async () => {
    const memory = createInMemoryPermissionMemory();
    await memory.set(key, "reject_always");
    const ask = answering("allow_once");
    const decision = await decidePermission({ memory, key, ask, usable: () => false });
    expect(decision).toEqual({ outcome: "allow_once", remembered: false });
    expect(ask.calls).toBe(1);
  });

  it.each(["allow_always", "reject_always"] as const)(
    "asks, then remembers %s for the next request with the same key",
    async (answer) => {
      const memory = createInMemoryPermissionMemory();
      const ask = answering(answer);
      expect(await decidePermission({ memory, key, ask })).toEqual({
        outcome: answer,
        remembered: false,
      });
      expect(await memory.get(key)).toBe(answer);
      expect(await decidePermission({ memory, key, ask })).toEqual({
        outcome: answer,
        remembered: true,
      });
      expect(ask.calls).toBe(1);
      // Another kind of tool is not covered by the answer.
      expect(await memory.get({ ...key, toolKind: "execute" })).toBeNull();
    },
  );

  it.each(["allow_once", "reject_once"] as const)("does not remember %s", async (answer) => {
    const memory = createInMemoryPermissionMemory();
    const ask = answering(answer);
    await decidePermission({ memory, key, ask });
    await decidePermission({ memory, key, ask });
    expect(ask.calls).toBe(2);
    expect(await memory.get(key)).toBeNull();
  });

  it("returns cancelled when the request is cancelled while asking, remembering nothing", async () => {
    const memory = createInMemoryPermissionMemory();
    const controller = new AbortController();
    let asking: () => void = () => undefined;
    const asked = new Promise<void>((resolve) => {
      asking = resolve;
    });
    const ask = () =>
      new Promise<PermissionOutcome>((resolve) => {
        controller.signal.addEventListener("abort", () => resolve("cancelled"), { once: true });
        asking();
      });
    const decision = decidePermission({ memory, key, ask });
    await asked;
    controller.abort();
    expect(await decision).toEqual({ outcome: "cancelled", remembered: false });
    expect(await memory.get(key)).toBeNull();
  });

  it("passes on an ask that fails (an aborted turn) and remembers nothing", async () => {
    const memory = createInMemoryPermissionMemory();
    const aborted = new Error("the turn was interrupted");
    await expect(
      decidePermission({
        memory,
        key,
        ask: async () => {
          throw aborted;
        },
      }),
    ).rejects.toBe(aborted);
    expect(await memory.get(key)).toBeNull();
  });

  it("asks when the memory cannot be read, and logs why", async () => {
    const memory: PermissionMemory = {
      get: async () => {
        throw new Error("database is down");
      },
      set: async () => undefined,
    };
    const logger = recordingLogger();
    const ask = answering("allow_once");
    const decision = await decidePermission({
      memory,
      key,
      ask,
      logger,
      logFields: { session_id: "session-1" },
    });
    expect(decision).toEqual({ outcome: "allow_once", remembered: false });
    expect(logger.lines).toEqual([
      {
        message: "cannot read remembered permissions; asking the user",
        fields: { session_id: "session-1", error: "database is down" },
      },
    ]);
  });

  it("keeps the answer when it cannot be remembered, and logs why", async () => {
    const memory: PermissionMemory = {
      get: async () => null,
      set: async () => {
        throw new Error("disk full");
      },
    };
    const logger = recordingLogger();
    const decision = await decidePermission({
      memory,
      key,
      ask: answering("allow_always"),
      logger,
    });
    expect(decision).toEqual({ outcome: "allow_always", remembered: false });
    expect(logger.lines).toEqual([
      { message: "cannot remember a permission answer", fields: { error: "disk full" } },
    ]);
  });
});
