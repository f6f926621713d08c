// Rollout windows as time: which window is in force at an instant (days and times read on the
// wall clock of each window's time zone, the last matching window winning, as Sourcegraph's
// `batchChanges.rolloutWindows` do), the spacing its rate asks for, and a timeline of the
// instants where that can change, across midnights and daylight-saving shifts.
import type { RolloutWindow } from "@deckhand/wire";

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const DAY_INDEX: Record<string, number> = {
  sunday: 0,
  monday: 1,
  tuesday: 2,
  wednesday: 3,
  thursday: 4,
  friday: 5,
  saturday: 6,
};
const DAY_SHORT = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];

/** A window as the timeline uses it: minutes of the day, a day set, an interval in ms. */
export interface ParsedWindow {
  source: RolloutWindow;
  timeZone: string;
  /** Days it applies to (0 is Sunday); all seven when the window names none. */
  days: ReadonlySet<number>;
  /** Minutes after local midnight, [start, end); the whole day when the window has no times. */
  start: number;
  end: number;
  /** Time between two publications: 0 for `unlimited`, Infinity for a rate of 0. */
  intervalMs: number;
}

/** The wall clock of a time zone at an instant. */
export interface WallClock {
  /** The local date and time as if it were UTC, in ms (for arithmetic on local times). */
  local: number;
  weekday: number;
  minuteOfDay: number;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatterOf(timeZone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(timeZone);
  if (formatter === undefined) {
    formatter = new Intl.DateTimeFormat("en-US", {
      timeZone,
      hourCycle: "h23",
      year: "numeric",
      month: "numeric",
      day: "numeric",
      hour: "numeric",
      minute: "numeric",
    });
    formatters.set(timeZone, formatter);
  }
  return formatter;
}

/** The wall clock in `timeZone` at `instant` (minute precision, which offsets all have). */
export function wallClock(instant: number, timeZone: string): WallClock {
  const parts: Record<string, number> = {};
  for (const part of formatterOf(timeZone).formatToParts(instant)) {
    if (part.type !== "literal") parts[part.type] = Number(part.value);
  }
  const local = Date.UTC(parts.year!, parts.month! - 1, parts.day!, parts.hour!, parts.minute!);
  return {
    local,
    weekday: new Date(local).getUTCDay(),
    minuteOfDay: parts.hour! * 60 + parts.minute!,
  };
}

/** Minutes the zone is ahead of UTC at `instant`. */
function offsetAt(instant: number, timeZone: string): number {
  const minute = Math.floor(instant / MINUTE) * MINUTE;
  return wallClock(minute, timeZone).local - minute;
}

/**
 * The instants at which the wall clock of `timeZone` shows `local` (a local time as UTC ms): one
 * usually, two when clocks go back over it, and none when clocks jump over it, in which case
 * the instant of the jump (the first at which the clock shows a later time) is returned.
 */
export function instantsOfLocal(local: number, timeZone: string): number[] {
  const offsets = new Set([
    offsetAt(local - DAY, timeZone),
    offsetAt(local, timeZone),
    offsetAt(local + DAY, timeZone),
  ]);
  const found = new Set<number>();
  for (const offset of offsets) {
    const candidate = local - offset;
    if (wallClock(candidate, timeZone).local === local) found.add(candidate);
  }
  if (found.size > 0) return [...found].sort((left, right) => left - right);
  // A gap: the clock jumps over `local`. Search the minutes between the two readings for the
  // first instant whose wall clock has passed it.
  const readings = [...offsets].map((offset) => local - offset).sort((left, right) => left - right);
  let low = readings[0]!;
  let high = readings.at(-1)!;
  while (high - low > MINUTE) {
    const middle = low + Math.floor((high - low) / MINUTE / 2) * MINUTE;
    if (wallClock(middle, timeZone).local >= local) high = middle;
    else low = middle;
  }
  return [high];
}

/** The instants in [from, to] where the zone's offset changes (daylight saving, mostly). */
function offsetChanges(from: number, to: number, timeZone: string): number[] {
  const changes: number[] = [];
  const step = 6 * HOUR;
  let previous = offsetAt(from, timeZone);
  for (let at = from + step; at <= to + step; at += step) {
    const offset = offsetAt(at, timeZone);
    if (offset === previous) continue;
    let low = at - step;
    let high = at;
    while (high - low > MINUTE) {
      const middle = low + Math.floor((high - low) / MINUTE / 2) * MINUTE;
      if (offsetAt(middle, timeZone) === previous) low = middle;
      else high = middle;
    }
    changes.push(Math.floor(high / MINUTE) * MINUTE);
    previous = offset;
  }
  return changes;
}

function minutesOf(time: string): number {
  const [hours, minutes] = time.split(":").map(Number);
  return hours! * 60 + minutes!;
}

/** The spacing a rate asks for: `10/hour` is one every six minutes. */
export function intervalOfRate(rate: RolloutWindow["rate"]): number {
  if (rate === 0) return Number.POSITIVE_INFINITY;
  if (rate === "unlimited") return 0;
  const match = /^(\d+)\/(second|minute|hour)$/.exec(String(rate));
  if (match === null) throw new RangeError(`not a rollout rate: ${JSON.stringify(rate)}`);
  const count = Number(match[1]);
  if (count === 0) return Number.POSITIVE_INFINITY;
  const unit = match[2] === "second" ? 1_000 : match[2] === "minute" ? MINUTE : HOUR;
  return unit / count;
}

export function parseWindow(window: RolloutWindow): ParsedWindow {
  const days = new Set((window.days ?? []).map((day) => DAY_INDEX[day.toLowerCase()]!));
  return {
    source: window,
    timeZone: window.timezone ?? "UTC",
    days: days.size === 0 ? new Set([0, 1, 2, 3, 4, 5, 6]) : days,
    start: window.start === undefined ? 0 : minutesOf(window.start),
    end: window.end === undefined ? 24 * 60 : minutesOf(window.end),
    intervalMs: intervalOfRate(window.rate),
  };
}

/** Whether a window covers an instant. */
export function windowCovers(window: ParsedWindow, instant: number): boolean {
  const clock = wallClock(instant, window.timeZone);
  return (
    window.days.has(clock.weekday) &&
    clock.minuteOfDay >= window.start &&
    clock.minuteOfDay < window.end
  );
}

/** A window in words: `10/hour Mon, Fri 09:00–17:30 Europe/Berlin`. */
export function describeWindow(window: ParsedWindow): string {
  const days =
    window.days.size === 7
      ? "every day"
      : [...window.days]
          .sort()
          .map((day) => DAY_SHORT[day])
          .join(", ");
  const time = (minutes: number) =>
    `${String(Math.floor(minutes / 60)).padStart(2, "0")}:${String(minutes % 60).padStart(2, "0")}`;
  const hours =
    window.start === 0 && window.end === 24 * 60
      ? ""
      : ` ${time(window.start)}–${time(window.end)}`;
  const rate = window.source.rate === 0 ? "rate 0" : String(window.source.rate);
  return `${rate} ${days}${hours} ${window.timeZone}`;
}

/**
 * A set of rollout windows (the server's, or a spec's). With windows configured, publishing
 * happens only while one covers the instant, at the pace of the last one that does; a set that
 * is configured but empty never allows it, as Sourcegraph's empty `rolloutWindows` does not.
 */
export class RolloutWindowSet {
  readonly windows: readonly ParsedWindow[];

  constructor(windows: readonly RolloutWindow[]) {
    this.windows = windows.map(parseWindow);
  }

  /** The window in force at `instant`: the last that covers it; null when none does. */
  activeAt(instant: number): ParsedWindow | null {
    for (let index = this.windows.length - 1; index >= 0; index -= 1) {
      const window = this.windows[index]!;
      if (windowCovers(window, instant)) return window;
    }
    return null;
  }

  /** The spacing in force at `instant`: Infinity while no window allows publishing. */
  intervalAt(instant: number): number {
    return this.activeAt(instant)?.intervalMs ?? Number.POSITIVE_INFINITY;
  }

  /**
   * Every instant in (from, to] at which the window in force may change: each window's start,
   * end and midnight on its zone's wall clock, and each shift of a zone's offset.
   */
  boundaries(from: number, to: number): number[] {
    const found = new Set<number>();
    const zones = new Map<string, Set<number>>();
    for (const window of this.windows) {
      const minutes = zones.get(window.timeZone) ?? new Set<number>([0]);
      minutes.add(window.start % (24 * 60));
      minutes.add(window.end % (24 * 60));
      zones.set(window.timeZone, minutes);
    }
    for (const [timeZone, minutes] of zones) {
      const firstDay = Math.floor(wallClock(from, timeZone).local / DAY) * DAY - DAY;
      for (
        let day = firstDay;
        day <= firstDay + Math.ceil((to - from) / DAY) * DAY + 2 * DAY;
        day += DAY
      ) {
        for (const minute of minutes) {
          for (const instant of instantsOfLocal(day + minute * MINUTE, timeZone)) {
            if (instant > from && instant <= to) found.add(instant);
          }
        }
      }
      for (const instant of offsetChanges(from, to, timeZone)) {
        if (instant > from && instant <= to) found.add(instant);
      }
    }
    return [...found].sort((left, right) => left - right);
  }
}

/** One stretch of time with one spacing (Infinity: closed) and the windows that set it. */
export interface TimelineSegment {
  start: number;
  /** Exclusive; the last segment ends at the timeline's horizon. */
  end: number;
  intervalMs: number;
  /** Describes what is in force, for the API's words ("10/hour every day UTC"). */
  windows: ParsedWindow[];
}

/**
 * The combined effect of several window sets (the server's and the spec's) from `from` to a
 * horizon: a publication needs every set to allow it, at the slowest of their paces. Computed
 * once per plan, so finding the next opening is a walk over a short array.
 */
export class WindowTimeline {
  readonly segments: readonly TimelineSegment[];
  readonly horizon: number;

  constructor(sets: readonly RolloutWindowSet[], from: number, horizon: number) {
    this.horizon = horizon;
    const cuts = new Set<number>([from]);
    for (const set of sets) for (const cut of set.boundaries(from, horizon)) cuts.add(cut);
    const sorted = [...cuts].sort((left, right) => left - right);
    const segments: TimelineSegment[] = [];
    for (let index = 0; index < sorted.length; index += 1) {
      const start = sorted[index]!;
      const end = sorted[index + 1] ?? horizon;
      const active = sets.map((set) => set.activeAt(start));
      const intervalMs = active.some((window) => window === null)
        ? Number.POSITIVE_INFINITY
        : Math.max(0, ...active.map((window) => window!.intervalMs));
      const windows = active.filter((window): window is ParsedWindow => window !== null);
      const previous = segments.at(-1);
      if (
        previous !== undefined &&
        previous.intervalMs === intervalMs &&
        sameWindows(previous.windows, windows)
      ) {
        previous.end = end;
      } else {
        segments.push({ start, end, intervalMs, windows });
      }
    }
    this.segments = segments;
  }

  /** The segment holding `instant`; undefined before the start or at/after the horizon. */
  at(instant: number): TimelineSegment | undefined {
    let low = 0;
    let high = this.segments.length - 1;
    while (low <= high) {
      const middle = (low + high) >> 1;
      const segment = this.segments[middle]!;
      if (instant < segment.start) high = middle - 1;
      else if (instant >= segment.end) low = middle + 1;
      else return segment;
    }
    return undefined;
  }

  /** The first instant at or after `instant` at which publishing is allowed; null if none. */
  nextOpen(instant: number): number | null {
    let segment = this.at(instant);
    if (segment === undefined) return null;
    let index = this.segments.indexOf(segment);
    while (segment !== undefined) {
      if (Number.isFinite(segment.intervalMs)) return Math.max(instant, segment.start);
      index += 1;
      segment = this.segments[index];
    }
    return null;
  }
}

function sameWindows(left: readonly ParsedWindow[], right: readonly ParsedWindow[]): boolean {
  return left.length === right.length && left.every((window, index) => window === right[index]);
}
