import { type BatchRun, ServerPath } from "@deckhand/wire";
import { useEffect, useState } from "react";
import { Link } from "wouter";
import { type Answer, api, messageOf } from "../api.ts";
import { StatsBar } from "../batches/stats-bar.tsx";
import { LoadState } from "../components/load-state.tsx";
import { useConnection } from "../connection.ts";

/** Every batch run, newest first: name, action, status and counts. */
export function BatchesScreen() {
  const [runs, setRuns] = useState<BatchRun[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  // Loaded again when the server comes back, so an outage's error does not stay.
  const { reconnects } = useConnection();

  useEffect(() => {
    void reconnects;
    let live = true;
    const load = () =>
      api<Answer<"listBatchRuns">>("GET", `${ServerPath.batchRuns}?limit=100`)
        .then((list) => {
          if (!live) return;
          setRuns(list.batch_runs as BatchRun[]);
          setError(null);
        })
        .catch((failure: unknown) => live && setError(messageOf(failure)));
    void load();
    // Running runs change their counts: look again every few seconds.
    const timer = setInterval(load, 5_000);
    return () => {
      live = false;
      clearInterval(timer);
    };
  }, [reconnects]);

  return (
    <main>
      <header className="screen-header">
        <h1>Batch changes</h1>
        <Link href="/batches/new" className="button primary">
          New batch change
        </Link>
      </header>
      <LoadState error={error} loading={runs === null} />
      {runs?.length === 0 && (
        <p className="card">
          No batch runs yet. <Link href="/batches/new">Write a spec</Link> to start one.
        </p>
      )}
      {runs && runs.length > 0 && (
        <ul className="run-list" aria-label="Batch runs">
          {runs.map((run) => (
            <li key={run.id} className="card">
              <div className="card-header">
                <h2>
                  <Link href={`/batches/runs/${run.id}`}>{run.name}</Link>
                </h2>
                <span className="badge">{run.action}</span>
                <span className="badge" data-status={run.status}>
                  {run.status}
                </span>
              </div>
              <StatsBar stats={run.stats} />
              <p className="muted">Created {new Date(run.created_at).toLocaleString()}</p>
            </li>
          ))}
        </ul>
      )}
    </main>
  );
}
