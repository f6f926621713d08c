import { describe, expect, it } from "vitest";
import { durationMsOr, parseDurationMs } from "./duration.ts";

describe("parseDurationMs", () => {
  it("reads Go durations as Coder's tools take them", () => {
    expect(parseDurationMs("10s")).toBe(10_000);
    expect(parseDurationMs("0s")).toBe(0);
    expect(parseDurationMs("0")).toBe(0);
    expect(parseDurationMs("250ms")).toBe(250);
    expect(parseDurationMs("1m30s")).toBe(90_000);
    expect(parseDurationMs("1.5h")).toBe(5_400_000);
    expect(parseDurationMs(".5s")).toBe(500);
    expect(parseDurationMs("+2s")).toBe(2000);
  });

  it("counts a positive duration under a millisecond as one, so only zero is a snapshot", () => {
    expect(parseDurationMs("300us")).toBe(1);
    expect(parseDurationMs("300\u00b5s")).toBe(1);
    expect(parseDurationMs("5ns")).toBe(1);
    expect(parseDurationMs("0ms")).toBe(0);
  });

  it("refuses numbers without a unit, unknown units, negatives and junk", () => {
    for (const text of [
      "10",
      "",
      "s",
      "10 s",
      "10sec",
      "1d",
      "-1s",
      "1s-",
      "ten seconds",
      "1e3ms",
    ]) {
      expect(parseDurationMs(text), text).toBeNull();
    }
  });
});

describe("durationMsOr", () => {
  it("reads a given duration and falls back when there is none or it does not parse", () => {
    expect(durationMsOr("2m", 10_000)).toBe(120_000);
    expect(durationMsOr("0s", 10_000)).toBe(0);
    expect(durationMsOr(undefined, 10_000)).toBe(10_000);
    expect(durationMsOr("soon", 10_000)).toBe(10_000);
  });
});
