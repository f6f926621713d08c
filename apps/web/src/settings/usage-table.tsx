import type { UsageRow, UsageTotals } from "@deckhand/wire";

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
