import type { BatchChangeBurndownPoint } from "@deckhand/wire";

const SERIES = [
  { key: "open", label: "open", className: "burndown-open" },
  { key: "draft", label: "draft", className: "burndown-draft" },
  { key: "merged", label: "merged", className: "burndown-merged" },
  { key: "closed", label: "closed", className: "burndown-closed" },
] as const;

const WIDTH = 600;
const HEIGHT = 180;
/** The axis labels are HTML outside the SVG: the plot needs only room for its strokes. */
const PAD = { left: 2, right: 2, top: 8, bottom: 2 };

/**
 * The pull requests of a batch change per state over time, as steps (a count holds until the
 * next change). A hand-made SVG: no chart library in the bundle. The SVG stretches to the
 * width, so its lines do; the axis numbers and dates are HTML beside it, so they never are.
 * Screen readers get the chart's name, a summary of where it ends, and the points as a table.
 */
export function BurndownChart({ points }: { points: readonly BatchChangeBurndownPoint[] }) {
  if (points.length === 0) {
    return (
      <p className="muted">No pull request published yet: the burndown starts with the first.</p>
    );
  }
  const times = points.map((point) => Date.parse(point.at));
  const first = times[0]!;
  const last = Math.max(times.at(-1)!, first + 1);
  const top = Math.max(1, ...points.map((point) => Math.max(...SERIES.map((s) => point[s.key]))));
  const x = (time: number) =>
    PAD.left + ((time - first) / (last - first)) * (WIDTH - PAD.left - PAD.right);
  const y = (value: number) => PAD.top + (1 - value / top) * (HEIGHT - PAD.top - PAD.bottom);
  const path = (key: (typeof SERIES)[number]["key"]) => {
    let d = "";
    points.forEach((point, index) => {
      const px = x(times[index]!);
      const py = y(point[key]);
      d += index === 0 ? `M${px},${py}` : `H${px}V${py}`;
    });
    return `${d}H${x(last)}`;
  };
  const end = points.at(-1)!;
  const summary = `${SERIES.map((s) => `${end[s.key]} ${s.label}`).join(", ")} at ${new Date(end.at).toLocaleString()}, over ${points.length} change${points.length === 1 ? "" : "s"}`;
  return (
    <figure className="burndown">
      <div className="burndown-plot">
        <div className="burndown-y" aria-hidden="true">
          <span className="burndown-tick">{top}</span>
          <span className="burndown-tick">0</span>
        </div>
        <svg
          viewBox={`0 0 ${WIDTH} ${HEIGHT}`}
          role="img"
          aria-labelledby="burndown-title burndown-description"
          preserveAspectRatio="none"
        >
          <title id="burndown-title">Burndown: pull requests per state</title>
          <desc id="burndown-description">{summary}</desc>
          <line className="burndown-axis" x1={PAD.left} x2={PAD.left} y1={PAD.top} y2={y(0)} />
          <line
            className="burndown-axis"
            x1={PAD.left}
            x2={WIDTH - PAD.right}
            y1={y(0)}
            y2={y(0)}
          />
          {SERIES.map((series) => (
            <path
              key={series.key}
              className={`burndown-line ${series.className}`}
              d={path(series.key)}
            />
          ))}
        </svg>
      </div>
      <div className="burndown-x" aria-hidden="true">
        <span className="burndown-tick">{new Date(first).toLocaleDateString()}</span>
        <span className="burndown-tick">{new Date(last).toLocaleDateString()}</span>
      </div>
      <figcaption>
        <ul className="burndown-legend">
          {SERIES.map((series) => (
            <li key={series.key}>
              <span className={`burndown-swatch ${series.className}`} aria-hidden="true" />
              {series.label} <strong data-series={series.key}>{end[series.key]}</strong>
            </li>
          ))}
        </ul>
      </figcaption>
      {/* A table is never narrower than its content: the wrapper is what is hidden. */}
      <div className="visually-hidden">
        <table>
          <caption>Pull requests per state after each change</caption>
          <thead>
            <tr>
              <th scope="col">time</th>
              {SERIES.map((series) => (
                <th key={series.key} scope="col">
                  {series.label}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {points.map((point) => (
              <tr key={point.at}>
                <th scope="row">{new Date(point.at).toLocaleString()}</th>
                {SERIES.map((series) => (
                  <td key={series.key}>{point[series.key]}</td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </figure>
  );
}

/**
 * A batch change's burndown in a table cell: the pull requests still open (and draft) over
 * time, as a step line, with its end in words for screen readers.
 */
export function BurndownSparkline({
  points,
  name,
}: {
  points: readonly BatchChangeBurndownPoint[];
  name: string;
}) {
  if (points.length === 0) return <span className="muted">no pull requests yet</span>;
  const times = points.map((point) => Date.parse(point.at));
  const first = times[0]!;
  const last = Math.max(times.at(-1)!, first + 1);
  const remaining = points.map((point) => point.open + point.draft);
  const top = Math.max(1, ...points.map((point) => point.open + point.draft + point.merged));
  const x = (time: number) => 1 + ((time - first) / (last - first)) * 98;
  const y = (value: number) => 2 + (1 - value / top) * 20;
  let d = "";
  remaining.forEach((value, index) => {
    d += index === 0 ? `M${x(times[index]!)},${y(value)}` : `H${x(times[index]!)}V${y(value)}`;
  });
  d += `H${x(last)}`;
  const end = points.at(-1)!;
  return (
    <svg
      className="sparkline"
      viewBox="0 0 100 24"
      preserveAspectRatio="none"
      role="img"
      aria-label={`Burndown of ${name}: ${end.open + end.draft} open, ${end.merged} merged, ${end.closed} closed`}
    >
      <path className="burndown-line burndown-open" d={d} />
    </svg>
  );
}
