import type { SessionUsageResponse, UsageRow, UsageTotals } from "@deckhand/wire";
import { useEffect, useState } from "react";
import { messageOf, server } from "../api.ts";
import { SessionSpend } from "../budgets/session-spend.tsx";
import { LoadState } from "../components/load-state.tsx";

/** Totals in one line. */
export function UsageTotalsLine({ totals }: { totals: UsageTotals }) {
  return (
    <p>
      {totals.requests} requests · {totals.input_tokens} input tokens · {totals.output_tokens}{" "}
      output tokens · {totals.total_tokens} in total
    </p>
  );
}

/** The requests the model proxy forwarded, one row each. */
export function UsageTable({ rows, caption }: { rows: readonly UsageRow[]; caption: string }) {
  if (rows.length === 0) return null;
  return (
    <div className="table-scroll">
      <table>
        <caption className="visually-hidden">{caption}</caption>
        <thead>
          <tr>
            <th scope="col">When</th>
            <th scope="col">Agent</th>
            <th scope="col">Upstream</th>
            <th scope="col">Model</th>
            <th scope="col">Tokens in / out</th>
            <th scope="col">Status</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((row) => (
            <tr key={`${row.job_id}-${row.created_at}-${row.endpoint}-${row.request_bytes}`}>
              <td>{new Date(row.created_at).toLocaleString()}</td>
              <td>{row.agent_type}</td>
              <td>{row.upstream}</td>
              <td>{row.model ?? "—"}</td>
              <td>
                {row.input_tokens ?? "—"} / {row.output_tokens ?? "—"}
              </td>
              <td>
                {row.status} {row.outcome}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** A session's usage: its totals, each agent's, and a row per model request. */
export function SessionUsageView({ usage }: { usage: SessionUsageResponse }) {
  return (
    <>
      <UsageTotalsLine totals={usage.totals} />
      {usage.jobs.length === 0 ? (
        <p className="muted">No agent has run in this session yet.</p>
      ) : (
        <ul className="usage-jobs" aria-label="Agents of the session">
          {usage.jobs.map((job) => (
            <li key={job.job_id}>
              <strong>{job.agent}</strong>{" "}
              <span className="muted">
                {job.chat_id ? `chat ${job.chat_id.slice(0, 8)} · ` : ""}
                {job.totals.requests} requests · {job.totals.total_tokens} tokens
              </span>
            </li>
          ))}
        </ul>
      )}
      <UsageTable rows={usage.usage} caption={`Requests of session ${usage.session_id}`} />
    </>
  );
}

/** A session's usage, loaded when shown (the session screen's Usage tab). */
export function SessionUsagePanel({ sessionId }: { sessionId: string }) {
  const [usage, setUsage] = useState<SessionUsageResponse | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    let live = true;
    server
      .getSessionUsage({ params: { session_id: sessionId } })
      .then((loaded) => live && setUsage(loaded))
      .catch((failure: unknown) => live && setError(messageOf(failure)));
    return () => {
      live = false;
    };
  }, [sessionId]);
  return (
    <section aria-labelledby="session-usage-heading">
      <h2 id="session-usage-heading">Model usage</h2>
      <SessionSpend sessionId={sessionId} />
      <LoadState error={error} loading={usage === null && error === null} />
      {usage && <SessionUsageView usage={usage} />}
    </section>
  );
}
