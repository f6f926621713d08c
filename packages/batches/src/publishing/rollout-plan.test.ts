// The rollout plan on a clock the test sets: the hourly limit over a sliding hour, the
// concurrent limit, canaries, and windows with their pace, in their time zones.
import { describe, expect, it } from "vitest";
import { planRollout, type RolloutPlanInput } from "./rollout-plan.ts";
import { RolloutWindowSet } from "./rollout-windows.ts";

const MINUTE = 60_000;
const now = Date.parse("2025-06-04T10:00:00Z"); // a Wednesday

function input(overrides: Partial<RolloutPlanInput>): RolloutPlanInput {
  return {
    now,
    settings: {},
    serverWindows: null,
    specWindows: null,
    publishedAt: [],
    lastServerPublication: null,
    open: 0,
    canary: null,
    pending: ["a", "b", "c", "d"].map((id) => ({ id, canary: false })),
    ...overrides,
  };
}

const minutesFromNow = (at: number | null) => (at === null ? null : (at - now) / MINUTE);

describe("planning a rollout", () => {
  it("publishes everything now without a pace", () => {
    const plan = planRollout(input({}));
    expect(plan.dueNow).toBe(4);
    expect(plan.items.map((item) => [item.at, item.waitingFor])).toEqual(
      ["a", "b", "c", "d"].map(() => [now, "pace"]),
    );
    expect(plan.nextAt).toBeNull();
  });

  it("keeps to the hourly limit over a sliding hour", () => {
    const plan = planRollout(
      input({
        settings: { hourlyLimit: 3 },
        publishedAt: [now - 50 * MINUTE, now - 10 * MINUTE, now - 3 * 60 * MINUTE],
      }),
    );
    expect(plan.items.map((item) => minutesFromNow(item.at))).toEqual([0, 10, 50, 60]);
    expect(plan.items.map((item) => item.waitingFor)).toEqual([
      "pace",
      "hourly_limit",
      "hourly_limit",
      "hourly_limit",
    ]);
    expect(plan.items[1]!.detail).toBe("the hourly limit of 3 is used up until then");
    expect(plan.dueNow).toBe(1);
    expect(minutesFromNow(plan.nextAt)).toBe(10);
  });

  it("holds what would pass the concurrent limit until a pull request merges or closes", () => {
    const plan = planRollout(input({ settings: { concurrentLimit: 5 }, open: 3 }));
    expect(plan.items.map((item) => [minutesFromNow(item.at), item.waitingFor])).toEqual([
      [0, "pace"],
      [0, "pace"],
      [null, "concurrent_limit"],
      [null, "concurrent_limit"],
    ]);
    expect(plan.items[2]!.detail).toBe(
      "5 pull requests are open, the concurrent limit; the next goes out when one merges or closes",
    );
    expect(plan.dueNow).toBe(2);
    expect(plan.nextAt).toBeNull();
  });

  it("publishes the canaries first and the rest once all their checks passed", () => {
    const pending = [
      { id: "canary-1", canary: true },
      { id: "canary-2", canary: true },
      { id: "rest-1", canary: false },
      { id: "rest-2", canary: false },
    ];
    const waiting = planRollout(
      input({ pending, canary: { count: 2, published: 0, passed: 0, failing: [] } }),
    );
    expect(waiting.items.map((item) => item.waitingFor)).toEqual([
      "pace",
      "pace",
      "canary",
      "canary",
    ]);
    expect(waiting.dueNow).toBe(2);

    const rest = pending.slice(2);
    const halfPassed = planRollout(
      input({ pending: rest, canary: { count: 2, published: 2, passed: 1, failing: [] } }),
    );
    expect(halfPassed.items[0]!.detail).toBe(
      "waiting for the checks of the 2 canary pull requests to pass (1 passed so far)",
    );
    expect(halfPassed.dueNow).toBe(0);

    const passed = planRollout(
      input({ pending: rest, canary: { count: 2, published: 2, passed: 2, failing: [] } }),
    );
    expect(passed.dueNow).toBe(2);

    const failed = planRollout(
      input({
        pending: rest,
        canary: { count: 2, published: 2, passed: 1, failing: ["acme/api@fix"] },
      }),
    );
    expect(failed.items.map((item) => item.waitingFor)).toEqual(["canary_failed", "canary_failed"]);
    expect(failed.items[0]!.detail).toMatch(/halted: the checks of canary acme\/api@fix failed/);
  });

  it("spreads publications at a window's pace", () => {
    const plan = planRollout(input({ specWindows: new RolloutWindowSet([{ rate: "10/hour" }]) }));
    expect(plan.items.map((item) => minutesFromNow(item.at))).toEqual([0, 6, 12, 18]);
    expect(plan.dueNow).toBe(1);
  });

  it("paces the server's windows after any batch change's last publication", () => {
    const plan = planRollout(
      input({
        serverWindows: new RolloutWindowSet([{ rate: "10/hour" }]),
        lastServerPublication: now - MINUTE,
      }),
    );
    expect(plan.items.map((item) => minutesFromNow(item.at))).toEqual([5, 11, 17, 23]);
    expect(plan.dueNow).toBe(0);
  });

  it("waits for a window in its time zone, across a daylight-saving shift", () => {
    // Friday 28 March 2025, 17:30 in Berlin (CET): the office window has closed; the clocks go
    // forward on Sunday, so Monday 09:00 in Berlin is 07:00 UTC.
    const friday = Date.parse("2025-03-28T16:30:00Z");
    const plan = planRollout(
      input({
        now: friday,
        specWindows: new RolloutWindowSet([
          {
            rate: "unlimited",
            days: ["monday", "tuesday", "wednesday", "thursday", "friday"],
            start: "09:00",
            end: "17:00",
            timezone: "Europe/Berlin",
          },
        ]),
      }),
    );
    expect(plan.items.map((item) => new Date(item.at!).toISOString())).toEqual(
      Array(4).fill("2025-03-31T07:00:00.000Z"),
    );
    expect(plan.items[0]!.waitingFor).toBe("window");
    expect(plan.items[0]!.detail).toBe(
      "a rollout window opens then (unlimited Mon, Tue, Wed, Thu, Fri 09:00–17:00 Europe/Berlin)",
    );
    expect(plan.dueNow).toBe(0);
    expect(new Date(plan.nextAt!).toISOString()).toBe("2025-03-31T07:00:00.000Z");
  });

  it("moves what the pace pushes past a window's end to the next window", () => {
    // 1/hour from 10:00 to 12:00 UTC: two go out today, the rest tomorrow.
    const plan = planRollout(
      input({
        specWindows: new RolloutWindowSet([{ rate: "1/hour", start: "10:00", end: "12:00" }]),
      }),
    );
    expect(plan.items.map((item) => new Date(item.at!).toISOString())).toEqual([
      "2025-06-04T10:00:00.000Z",
      "2025-06-04T11:00:00.000Z",
      "2025-06-05T10:00:00.000Z",
      "2025-06-05T11:00:00.000Z",
    ]);
  });

  it("needs both the server's and the spec's windows, and the hourly limit on top", () => {
    const plan = planRollout(
      input({
        settings: { hourlyLimit: 2 },
        serverWindows: new RolloutWindowSet([{ rate: "unlimited", start: "10:30", end: "23:00" }]),
        specWindows: new RolloutWindowSet([{ rate: "20/hour" }]),
      }),
    );
    expect(plan.items.map((item) => minutesFromNow(item.at))).toEqual([30, 33, 90, 93]);
    expect(plan.items.map((item) => item.waitingFor)).toEqual([
      "window",
      "pace",
      "hourly_limit",
      "hourly_limit",
    ]);
  });

  it("says so when no window opens within a week", () => {
    const plan = planRollout(input({ serverWindows: new RolloutWindowSet([{ rate: 0 }]) }));
    expect(plan.items.map((item) => [item.at, item.waitingFor])).toEqual(
      ["a", "b", "c", "d"].map(() => [null, "no_window"]),
    );
  });
});
