/** Milliseconds in one of each unit a Go duration may use (`time.ParseDuration`). */
const UNIT_MS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  "\u00b5s": 1e-3,
  "\u03bcs": 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

const TERM = /^(\d+(?:\.\d*)?|\.\d+)(ns|us|\u00b5s|\u03bcs|ms|s|m|h)/;

/**
 * A duration written the way Coder's tools take it (Go's `time.ParseDuration`: `"10s"`,
 * `"1m30s"`, `"250ms"`, `"0s"`, or a bare `"0"`), in milliseconds; null when the text is not
 * one or is negative. A positive duration shorter than a millisecond counts as one, so only
 * zero means "do not wait".
 */
export function parseDurationMs(text: string): number | null {
  let rest = text.trim();
  if (rest.startsWith("+")) rest = rest.slice(1);
  if (rest === "0") return 0;
  if (rest === "") return null;
  let total = 0;
  while (rest !== "") {
    const match = TERM.exec(rest);
    if (match === null) return null;
    total += Number(match[1]) * UNIT_MS[match[2]!]!;
    rest = rest.slice(match[0].length);
  }
  if (!Number.isFinite(total)) return null;
  return total > 0 ? Math.max(1, Math.round(total)) : 0;
}

/**
 * An optional duration argument in milliseconds, `fallbackMs` when it is absent. The tools'
 * schemas refuse text that is not a duration before a tool runs; text that reaches here without
 * them (a direct call of an exported tool's `execute`) gets the fallback too.
 */
export function durationMsOr(text: string | undefined, fallbackMs: number): number {
  return (text === undefined ? null : parseDurationMs(text)) ?? fallbackMs;
}
