// One way every benchmark reports a headline figure: a `FIGURE {json}` line that bench/run.ts
// gathers into the closing table (the performance issue's figures, each beside the anchor
// measured in the same run), after a line a person reads. A figure is a measurement and the
// reference it is judged against; nothing here asserts a time.
import { loadavg } from "node:os";

export interface Anchor {
  /** What the figure is compared with: the shell oracle, a bare spawn, `xargs -P`, ... */
  label: string;
  value: number;
  unit: string;
}

export interface Figure {
  /** Stable key; bench/run.ts orders and names the rows of its table by it. */
  id: string;
  /** What was measured, in words. */
  label: string;
  value: number;
  unit: string;
  anchor?: Anchor;
  /**
   * The comparison the goal is stated in, when it is not `value` itself: `value / anchor` (×),
   * a percentage, or the milliseconds added over the anchor.
   */
  comparison?: { value: number; unit: "×" | "%" | "+ms" };
  /** Anything a reader needs to weigh the figure: rounds, the database, the sandbox. */
  note?: string;
}

/** A figure that could not be measured here, and why (no Podman, no DATABASE_URL, ...). */
export interface SkippedFigure {
  id: string;
  label: string;
  skipped: string;
}

const FIGURE_PREFIX = "FIGURE ";

export function round(value: number, digits = 2): number {
  return Math.round(value * 10 ** digits) / 10 ** digits;
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((left, right) => left - right);
  return sorted[Math.floor(sorted.length / 2)]!;
}

export function percentile(values: readonly number[], fraction: number): number {
  const sorted = [...values].sort((left, right) => left - right);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))]!;
}

function formatValue(value: number, unit: string): string {
  return `${round(value, value >= 100 ? 0 : value >= 10 ? 1 : 3)} ${unit}`;
}

/** `ratio` as the goal states it: 1.23×, 17.0 %, +7.1 ms. */
export function formatComparison(comparison: NonNullable<Figure["comparison"]>): string {
  if (comparison.unit === "×") return `${round(comparison.value, 2)}×`;
  if (comparison.unit === "%") return `${round(comparison.value, 1)} %`;
  return `${comparison.value >= 0 ? "+" : ""}${round(comparison.value, 2)} ms`;
}

/** Prints the figure for a person, then for bench/run.ts. */
export function reportFigure(figure: Figure): void {
  const anchor = figure.anchor
    ? `  vs ${figure.anchor.label} ${formatValue(figure.anchor.value, figure.anchor.unit)}`
    : "";
  const comparison = figure.comparison ? ` → ${formatComparison(figure.comparison)}` : "";
  console.log(
    `» ${figure.label}: ${formatValue(figure.value, figure.unit)}${anchor}${comparison}${figure.note ? ` (${figure.note})` : ""}`,
  );
  console.log(`${FIGURE_PREFIX}${JSON.stringify(figure)}`);
}

export function reportSkipped(figure: SkippedFigure): void {
  console.log(`» ${figure.label}: not measured: ${figure.skipped}`);
  console.log(`${FIGURE_PREFIX}${JSON.stringify(figure)}`);
}

/** The figure a `FIGURE` line carries, or null for any other line. */
export function parseFigureLine(line: string): Figure | SkippedFigure | null {
  if (!line.startsWith(FIGURE_PREFIX)) return null;
  try {
    return JSON.parse(line.slice(FIGURE_PREFIX.length)) as Figure | SkippedFigure;
  } catch {
    return null;
  }
}

/** The 1-minute load average, for the record: figures from a busy machine read differently. */
export function loadAverage(): string {
  return loadavg()
    .map((value) => value.toFixed(2))
    .join(" ");
}

/** `PGlite` always; `PostgreSQL` as well when DATABASE_URL is set (tests' convention). */
export function databaseUrlFromEnvironment(): string | undefined {
  return process.env.DATABASE_URL || undefined;
}
