// Rollout windows on the wall clocks of their time zones: which one is in force, the pace it
// sets, and a timeline that misses no change, across midnights and daylight-saving shifts.
import type { RolloutWindow } from "@deckhand/wire";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  describeWindow,
  instantsOfLocal,
  intervalOfRate,
  RolloutWindowSet,
  WindowTimeline,
  wallClock,
} from "./rollout-windows.ts";

const at = (iso: string) => Date.parse(iso);
const iso = (instant: number | null) => (instant === null ? null : new Date(instant).toISOString());
const HOUR = 3_600_000;

describe("rates", () => {
  it("spreads a rate evenly, and stops at 0", () => {
    expect(intervalOfRate("10/hour")).toBe(6 * 60_000);
    expect(intervalOfRate("3/minute")).toBe(20_000);
    expect(intervalOfRate("2/second")).toBe(500);
    expect(intervalOfRate("unlimited")).toBe(0);
    expect(intervalOfRate(0)).toBe(Number.POSITIVE_INFINITY);
    expect(intervalOfRate("0/hour")).toBe(Number.POSITIVE_INFINITY);
  });
});

describe("which window is in force", () => {
  const berlinOfficeHours: RolloutWindow = {
    rate: "10/hour",
    days: ["monday", "tuesday", "wednesday", "thursday", "friday"],
    start: "09:00",
    end: "17:00",
    timezone: "Europe/Berlin",
  };

  it("reads days and hours on the window's wall clock", () => {
    const set = new RolloutWindowSet([berlinOfficeHours]);
    // Friday 28 March 2025: Berlin is UTC+1 (CET).
    expect(set.activeAt(at("2025-03-28T07:59:00Z"))).toBeNull();
    expect(set.activeAt(at("2025-03-28T08:00:00Z"))?.source).toBe(berlinOfficeHours);
    expect(set.activeAt(at("2025-03-28T15:59:00Z"))).not.toBeNull();
    expect(set.activeAt(at("2025-03-28T16:00:00Z"))).toBeNull();
    // Monday 31 March 2025, after the clocks went forward: UTC+2 (CEST).
    expect(set.activeAt(at("2025-03-31T06:59:00Z"))).toBeNull();
    expect(set.activeAt(at("2025-03-31T07:00:00Z"))).not.toBeNull();
    // Saturday is not a working day there, whatever the hour.
    expect(set.activeAt(at("2025-03-29T10:00:00Z"))).toBeNull();
  });

  it("lets the last matching window win, as Sourcegraph's do", () => {
    const set = new RolloutWindowSet([
      { rate: "unlimited" },
      {
        rate: "3/minute",
        days: ["monday", "tuesday", "wednesday", "thursday", "friday"],
        start: "08:00",
        end: "16:00",
      },
    ]);
    expect(set.intervalAt(at("2025-06-02T10:00:00Z"))).toBe(20_000);
    expect(set.intervalAt(at("2025-06-02T17:00:00Z"))).toBe(0);
    expect(set.intervalAt(at("2025-06-07T10:00:00Z"))).toBe(0);
  });

  it("allows nothing outside every window, and nothing at all with an empty list", () => {
    expect(
      new RolloutWindowSet([{ rate: "1/minute", days: ["saturday"] }]).intervalAt(
        at("2025-06-02T10:00:00Z"),
      ),
    ).toBe(Number.POSITIVE_INFINITY);
    expect(new RolloutWindowSet([]).intervalAt(at("2025-06-02T10:00:00Z"))).toBe(
      Number.POSITIVE_INFINITY,
    );
  });

  it("reads zones whose offsets are not whole hours", () => {
    // Kathmandu is UTC+5:45.
    const set = new RolloutWindowSet([
      { rate: "unlimited", start: "09:00", end: "10:00", timezone: "Asia/Kathmandu" },
    ]);
    expect(set.activeAt(at("2025-06-02T03:14:00Z"))).toBeNull();
    expect(set.activeAt(at("2025-06-02T03:15:00Z"))).not.toBeNull();
    expect(set.activeAt(at("2025-06-02T04:15:00Z"))).toBeNull();
  });

  it("describes a window in words", () => {
    expect(describeWindow(new RolloutWindowSet([berlinOfficeHours]).windows[0]!)).toBe(
      "10/hour Mon, Tue, Wed, Thu, Fri 09:00–17:00 Europe/Berlin",
    );
    expect(describeWindow(new RolloutWindowSet([{ rate: 0 }]).windows[0]!)).toBe(
      "rate 0 every day UTC",
    );
  });
});

describe("local times across daylight saving", () => {
  it("finds a local time that clocks skip at the jump, and one they repeat twice", () => {
    // New York, 9 March 2025: 02:00 EST becomes 03:00 EDT at 07:00 UTC.
    expect(instantsOfLocal(Date.UTC(2025, 2, 9, 2, 30), "America/New_York").map(iso)).toEqual([
      "2025-03-09T07:00:00.000Z",
    ]);
    // 2 November 2025: 02:00 EDT becomes 01:00 EST at 06:00 UTC, so 01:30 happens twice.
    expect(instantsOfLocal(Date.UTC(2025, 10, 2, 1, 30), "America/New_York").map(iso)).toEqual([
      "2025-11-02T05:30:00.000Z",
      "2025-11-02T06:30:00.000Z",
    ]);
    expect(wallClock(at("2025-11-02T06:30:00Z"), "America/New_York").minuteOfDay).toBe(90);
  });

  it("never opens a window the clocks skip, and opens one they repeat twice", () => {
    const skipped = new RolloutWindowSet([
      { rate: "unlimited", start: "02:00", end: "03:00", timezone: "America/New_York" },
    ]);
    const from = at("2025-03-08T12:00:00Z");
    const timeline = new WindowTimeline([skipped], from, from + 3 * 24 * HOUR);
    // 8 March (EST): 07:00 UTC has passed; 9 March is skipped; 10 March (EDT) at 06:00 UTC.
    expect(iso(timeline.nextOpen(from))).toBe("2025-03-10T06:00:00.000Z");

    const repeated = new RolloutWindowSet([
      { rate: "unlimited", start: "01:00", end: "01:30", timezone: "America/New_York" },
    ]);
    const night = at("2025-11-02T04:00:00Z");
    const twice = new WindowTimeline([repeated], night, night + 6 * HOUR);
    expect(
      twice.segments
        .filter((segment) => Number.isFinite(segment.intervalMs))
        .map((segment) => [iso(segment.start), iso(segment.end)]),
    ).toEqual([
      ["2025-11-02T05:00:00.000Z", "2025-11-02T05:30:00.000Z"],
      ["2025-11-02T06:00:00.000Z", "2025-11-02T06:30:00.000Z"],
    ]);
  });

  it("closes a window when the clocks go back out of it", () => {
    // 01:30–02:00 New York on 2 November 2025: open 05:30–06:00 UTC (EDT), then the clocks show
    // 01:00 again, and it opens once more 06:30–07:00 UTC (EST).
    const set = new RolloutWindowSet([
      { rate: "unlimited", start: "01:30", end: "02:00", timezone: "America/New_York" },
    ]);
    const from = at("2025-11-02T04:00:00Z");
    const timeline = new WindowTimeline([set], from, from + 6 * HOUR);
    expect(
      timeline.segments
        .filter((segment) => Number.isFinite(segment.intervalMs))
        .map((segment) => [iso(segment.start), iso(segment.end)]),
    ).toEqual([
      ["2025-11-02T05:30:00.000Z", "2025-11-02T06:00:00.000Z"],
      ["2025-11-02T06:30:00.000Z", "2025-11-02T07:00:00.000Z"],
    ]);
  });
});

describe("the timeline of several window sets", () => {
  it("needs every set to allow publishing, at the slowest pace", () => {
    const server = new RolloutWindowSet([{ rate: "60/hour" }]);
    const spec = new RolloutWindowSet([
      {
        rate: "unlimited",
        days: ["monday"],
        start: "09:00",
        end: "12:00",
        timezone: "Europe/Berlin",
      },
    ]);
    const from = at("2025-06-01T12:00:00Z"); // a Sunday
    const timeline = new WindowTimeline([server, spec], from, from + 8 * 24 * HOUR);
    expect(iso(timeline.nextOpen(from))).toBe("2025-06-02T07:00:00.000Z");
    expect(timeline.at(at("2025-06-02T08:00:00Z"))?.intervalMs).toBe(60_000);
    expect(timeline.at(at("2025-06-02T10:00:00Z"))?.intervalMs).toBe(Number.POSITIVE_INFINITY);
    expect(timeline.nextOpen(at("2025-06-02T10:00:00Z"))).toBe(at("2025-06-09T07:00:00Z"));
  });

  it("says when nothing opens before the horizon", () => {
    const closed = new RolloutWindowSet([{ rate: 0 }]);
    const from = at("2025-06-01T12:00:00Z");
    expect(new WindowTimeline([closed], from, from + 8 * 24 * HOUR).nextOpen(from)).toBeNull();
  });

  const zones = [
    "UTC",
    "Europe/Berlin",
    "America/New_York",
    "Australia/Lord_Howe",
    "Asia/Kathmandu",
    "Pacific/Chatham",
    "America/Santiago",
  ];
  const days = ["sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"];
  const time = fc
    .tuple(fc.integer({ min: 0, max: 23 }), fc.constantFrom(0, 15, 30, 45, 59))
    .map(
      ([hours, minutes]) => `${String(hours).padStart(2, "0")}:${String(minutes).padStart(2, "0")}`,
    );
  const window: fc.Arbitrary<RolloutWindow> = fc
    .record({
      rate: fc.constantFrom<RolloutWindow["rate"]>("unlimited", "10/hour", "1/minute", 0),
      days: fc.option(fc.subarray(days, { minLength: 1 }), { nil: undefined }),
      hours: fc.option(fc.tuple(time, time), { nil: undefined }),
      timezone: fc.constantFrom(...zones),
    })
    .map(({ rate, days: chosen, hours, timezone }) => {
      const result: RolloutWindow = { rate, timezone };
      if (chosen !== undefined) result.days = chosen;
      if (hours !== undefined && hours[0] !== hours[1]) {
        const [start, end] = hours[0] < hours[1] ? hours : [hours[1], hours[0]];
        result.start = start;
        result.end = end;
      }
      return result;
    });

  it("misses no change of the window in force, in any zone, around any date", () => {
    fc.assert(
      fc.property(
        fc.array(window, { minLength: 1, maxLength: 3 }),
        fc.array(window, { minLength: 0, maxLength: 2 }),
        // From 2024 to 2027: several daylight-saving shifts of every zone above.
        fc.integer({ min: Date.UTC(2024, 0, 1), max: Date.UTC(2027, 0, 1) }),
        fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { minLength: 20, maxLength: 20 }),
        (first, second, start, samples) => {
          const from = Math.floor(start / 60_000) * 60_000;
          const horizon = from + 3 * 24 * HOUR;
          const sets = [new RolloutWindowSet(first)];
          if (second.length > 0) sets.push(new RolloutWindowSet(second));
          const timeline = new WindowTimeline(sets, from, horizon);
          for (const sample of samples) {
            const instant = from + Math.floor(((horizon - from) * sample) / 60_000) * 60_000;
            if (instant >= horizon) continue;
            const expected = sets.some((set) => set.activeAt(instant) === null)
              ? Number.POSITIVE_INFINITY
              : Math.max(0, ...sets.map((set) => set.intervalAt(instant)));
            expect(timeline.at(instant)?.intervalMs).toBe(expected);
          }
        },
      ),
      { numRuns: 150 },
    );
  });
});
