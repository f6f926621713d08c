import { describe, expect, it } from "vitest";
import { MemoryProbeStore, type ProbeRecord } from "./probe-store.ts";

const record: ProbeRecord = {
  providerId: "scripted",
  fingerprint: "f1",
  status: "ready",
  result: {
    agentName: "scripted",
    version: "1.0.0",
    models: [],
    currentModel: null,
    modes: [],
    currentMode: null,
    commands: [],
    commandsComplete: true,
    stderrTail: "",
  },
  error: null,
  probedAt: new Date("2026-01-01T00:00:00Z"),
};

describe("MemoryProbeStore", () => {
  it("loads a copy of what was saved", async () => {
    const store = new MemoryProbeStore();
    await store.save(record);
    const loaded = await store.load("scripted");
    expect(loaded).toEqual(record);
    expect(loaded).not.toBe(store.records.get("scripted"));
    expect(await store.load("other")).toBeUndefined();
    expect(store).toMatchObject({ loads: 2, saves: 1 });
  });

  it("answers no record for a result that does not parse, as a database store does", async () => {
    const store = new MemoryProbeStore();
    store.records.set("scripted", { ...record, result: { models: "garbled" } as never });
    expect(await store.load("scripted")).toBeUndefined();
  });
});
