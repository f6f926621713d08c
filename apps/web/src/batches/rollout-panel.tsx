import type { BatchChangeRollout, RolloutWait, RolloutWindow } from "@deckhand/wire";
import { useEffect, useState } from "react";
import { server } from "../api.ts";
import { inHowLong } from "../budgets/spend-format.ts";
import { usePolled } from "../budgets/use-polled.ts";

const WAITS: Record<RolloutWait, string> = {
  pace: "pace",
  hourly_limit: "hourly limit",
  window: "rollout window",
  concurrent_limit: "open pull requests",
  canary: "canary checks",
  canary_failed: "canary failed",
  no_window: "no window",
};

/** Pending rows shown at once; the count says how many more wait. */
const SHOWN = 50;

function describeWindow(window: RolloutWindow): string {
  const days = window.days?.length ? window.days.join(", ") : "every day";
  const hours = window.start ? ` ${window.start}–${window.end}` : "";
  return `${window.rate === 0 ? "rate 0" : window.rate}, ${days}${hours} ${window.timezone ?? "UTC"}`;
}

/** The spec's pace and the server's windows, in one line each. */
function RolloutSettings({ rollout }: { rollout: BatchChangeRollout }) {
  const spec = rollout.settings.spec;
  const facts = [
    spec?.hourlyLimit === undefined ? null : `at most ${spec.hourlyLimit} per hour`,
    spec?.concurrentLimit === undefined ? null : `at most ${spec.concurrentLimit} open at once`,
    spec?.canary === undefined ? null : `${spec.canary.count} canary first`,
  ].filter((fact): fact is string => fact !== null);
  return (
    <dl className="facts">
      {facts.length > 0 && (
        <>
          <dt>pace</dt>
          <dd data-field="pace">{facts.join(", ")}</dd>
        </>
      )}
      {spec?.windows && (
        <>
          <dt>windows</dt>
          <dd>{spec.windows.map(describeWindow).join("; ")}</dd>
        </>
      )}
      {rollout.settings.server_windows && (
        <>
          <dt>server windows</dt>
          <dd>{rollout.settings.server_windows.map(describeWindow).join("; ") || "none open"}</dd>
        </>
      )}
      <dt>open now</dt>
      <dd data-field="open">{rollout.open}</dd>
      <dt>opened in the last hour</dt>
      <dd data-field="published-last-hour">{rollout.published_last_hour}</dd>
      {rollout.canary && (
        <>
          <dt>canary</dt>
          <dd data-field="canary">
            {rollout.canary.passed} of {rollout.canary.count} passed
            {rollout.canary.failing.length > 0
              ? `; failing: ${rollout.canary.failing.join(", ")}`
              : ""}
          </dd>
        </>
      )}
    </dl>
  );
}

/**
 * A batch change's paced rollout: its pace, its state, and every pull request waiting to be
 * opened with when it goes out (or what it waits for), refreshed while anything waits.
 */
export function RolloutPanel({ name, reloadKey }: { name: string; reloadKey: unknown }) {
  const [now, setNow] = useState(() => Date.now());
  const { data: rollout, error } = usePolled<BatchChangeRollout>(
    name,
    () => server.getBatchChangeRollout({ params: { name } }),
    { live: true, intervalMs: 30_000, reloadKey },
  );
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), 30_000);
    return () => clearInterval(timer);
  }, []);
  if (error !== null) return <p className="muted">Rollout: {error}</p>;
  if (rollout === null || (!rollout.paced && rollout.pending.length === 0)) return null;
  return (
    <section aria-labelledby="rollout-heading" className="rollout">
      <h2 id="rollout-heading">Rollout</h2>
      <p data-testid="rollout-state">
        <span className="badge" data-status={rollout.state === "halted" ? "failed" : rollout.state}>
          {rollout.state}
        </span>{" "}
        {rollout.pending.length} waiting
        {rollout.next_at
          ? `; next ${inHowLong(rollout.next_at, now)} (${new Date(rollout.next_at).toLocaleString()})`
          : ""}
      </p>
      {rollout.reason && (
        <p
          className={rollout.state === "halted" ? "error" : "muted"}
          role={rollout.state === "halted" ? "alert" : undefined}
        >
          {rollout.reason}
        </p>
      )}
      <RolloutSettings rollout={rollout} />
      {rollout.pending.length > 0 && (
        <table className="dense" aria-label="Pull requests waiting to be opened">
          <thead>
            <tr>
              <th scope="col">Repository</th>
              <th scope="col">Goes out</th>
              <th scope="col">Waiting for</th>
            </tr>
          </thead>
          <tbody>
            {rollout.pending.slice(0, SHOWN).map((item) => (
              <tr key={item.changeset_id} data-waiting-for={item.waiting_for}>
                <td>
                  {item.repository}@{item.branch}
                  {item.canary && <span className="badge">canary</span>}
                  {item.draft && <span className="badge">draft</span>}
                </td>
                <td>
                  {item.at === null ? (
                    "—"
                  ) : (
                    <time dateTime={item.at} title={new Date(item.at).toLocaleString()}>
                      {inHowLong(item.at, now)}
                    </time>
                  )}
                </td>
                <td title={item.detail}>{WAITS[item.waiting_for]}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {rollout.pending.length > SHOWN && (
        <p className="muted">and {rollout.pending.length - SHOWN} more after these</p>
      )}
    </section>
  );
}
