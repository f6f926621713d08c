import type { BatchChangeList, BatchRun } from "@deckhand/wire";
import { useEffect, useState } from "react";
import { Link } from "wouter";
import { messageOf, server } from "../api.ts";
import { BurndownSparkline } from "../batches/burndown-chart.tsx";
import { useContentMark } from "../components/content-mark.ts";
import { useDocumentTitle } from "../components/document-title.ts";
import { LoadState } from "../components/load-state.tsx";
import { useConnection } from "../connection.ts";

/** How often the lists are read again while something runs: counts move. */
const POLL_MS = 5_000;

function when(iso: string): string {
  return new Date(iso).toLocaleString();
}

/** A run's counts in a cell: done of all, with failures called out. */
function RunProgress({ run }: { run: BatchRun }) {
  const { stats } = run;
  return (
    <span className="run-progress">
      {stats.completed}/{stats.workspaces} done
      {stats.failed > 0 && (
        <>
          {" · "}
          <span className="error">{stats.failed} failed</span>
        </>
      )}
      {stats.running > 0 && <> · {stats.running} running</>}
      {" · "}
      {stats.changesets} changesets
    </span>
  );
}

/**
 * Batch changes as Sourcegraph lists them: each spec name with its latest run, its changesets
 * by state and a burndown sparkline; under them every run, newest first.
 */
export function BatchesScreen() {
  const [changes, setChanges] = useState<BatchChangeList["batch_changes"] | null>(null);
  const [runs, setRuns] = useState<BatchRun[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  // Loaded again when the server comes back, so an outage's error does not stay.
  const { reconnects } = useConnection();
  useDocumentTitle("Batch changes");
  useContentMark(runs !== null, "batches");

  useEffect(() => {
    void reconnects;
    let live = true;
    const load = () =>
      Promise.all([server.listBatchChanges(), server.listBatchRuns({ query: { limit: 100 } })])
        .then(([changeList, runList]) => {
          if (!live) return;
          setChanges(changeList.batch_changes);
          setRuns(runList.batch_runs);
          setError(null);
        })
        .catch((failure: unknown) => live && setError(messageOf(failure)));
    void load();
    const timer = setInterval(load, POLL_MS);
    return () => {
      live = false;
      clearInterval(timer);
    };
  }, [reconnects]);

  return (
    <main className="wide">
      <header className="screen-header">
        <h1>Batch changes</h1>
        <Link href="/batches/new" className="button primary">
          New batch change
        </Link>
      </header>
      <LoadState error={error} loading={runs === null && error === null} />
      {runs?.length === 0 && (
        <p className="card">
          No batch runs yet. <Link href="/batches/new">Write a spec</Link> to start one.
        </p>
      )}
      {changes && changes.length > 0 && (
        <section aria-labelledby="changes-heading">
          <h2 id="changes-heading">By name</h2>
          <div className="table-scroll">
            <table className="dense-table" aria-label="Batch changes">
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Latest run</th>
                  <th scope="col">Changesets</th>
                  <th scope="col">Burndown</th>
                </tr>
              </thead>
              <tbody>
                {changes.map((change) => (
                  <tr key={change.name}>
                    <th scope="row">
                      <Link href={`/batches/changes/${encodeURIComponent(change.name)}`}>
                        {change.name}
                      </Link>
                    </th>
                    <td>
                      <Link
                        href={`/batches/runs/${change.latest_run.id}`}
                        aria-label={`Latest run of ${change.name}: ${change.latest_run.action}, ${change.latest_run.status}`}
                      >
                        <span className="badge">{change.latest_run.action}</span>{" "}
                        <span className="badge" data-status={change.latest_run.status}>
                          {change.latest_run.status}
                        </span>
                      </Link>{" "}
                      <span className="muted">{when(change.latest_run.created_at)}</span>
                    </td>
                    <td>
                      <span className="badges">
                        {(["unpublished", "draft", "open", "merged", "closed"] as const)
                          .filter((state) => change.stats[state] > 0)
                          .map((state) => (
                            <span key={state} className="badge" data-status={state}>
                              {change.stats[state]} {state}
                            </span>
                          ))}
                        {change.stats.total === 0 && <span className="muted">none applied</span>}
                      </span>
                    </td>
                    <td>
                      <BurndownSparkline points={change.burndown} name={change.name} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </section>
      )}
      {runs && runs.length > 0 && (
        <section aria-labelledby="runs-heading">
          <h2 id="runs-heading">Runs</h2>
          <div className="table-scroll">
            <table className="dense-table" aria-label="Batch runs">
              <thead>
                <tr>
                  <th scope="col">Run</th>
                  <th scope="col">Action</th>
                  <th scope="col">Status</th>
                  <th scope="col">Progress</th>
                  <th scope="col">Created</th>
                </tr>
              </thead>
              <tbody>
                {runs.map((run) => (
                  <tr key={run.id} aria-label={`Run ${run.name}`}>
                    <th scope="row">
                      <Link href={`/batches/runs/${run.id}`}>{run.name}</Link>
                    </th>
                    <td>
                      <span className="badge">{run.action}</span>
                    </td>
                    <td>
                      <span className="badge" data-status={run.status}>
                        {run.status}
                      </span>
                    </td>
                    <td>
                      <RunProgress run={run} />
                    </td>
                    <td className="muted">{when(run.created_at)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </section>
      )}
    </main>
  );
}
