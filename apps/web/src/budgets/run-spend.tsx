import type { BatchRunSpend } from "@deckhand/wire";
import { server } from "../api.ts";
import { BudgetMeter } from "./budget-meter.tsx";
import { formatSpend } from "./spend-format.ts";
import { usePolled } from "./use-polled.ts";

/**
 * A run's model spend against its budget, the busiest workspaces against theirs, and the
 * server's day, refreshed while the run goes on.
 */
export function RunSpend({ runId, live }: { runId: string; live: boolean }) {
  const { data, error } = usePolled<BatchRunSpend>(
    runId,
    () => server.getBatchRunSpend({ params: { batch_run_id: runId } }),
    { live },
  );
  if (error !== null) return <p className="muted">Model spend: {error}</p>;
  if (data === null || (data.run.spent.requests === 0 && data.run.limit === null)) return null;
  const busiest = [...data.workspaces]
    .filter((workspace) => workspace.budget.spent.requests > 0 || workspace.budget.reached)
    .sort((left, right) => right.budget.spent.tokens - left.budget.spent.tokens)
    .slice(0, 5);
  return (
    <section className="run-spend" aria-labelledby="run-spend-heading">
      <h2 id="run-spend-heading">Model spend</h2>
      <BudgetMeter label="This run" status={data.run} currency={data.currency} />
      {data.day.limit !== null && (
        <BudgetMeter label="The server today" status={data.day} currency={data.currency} />
      )}
      {busiest.length > 0 && (
        <table className="dense">
          <caption className="visually-hidden">Model spend per workspace</caption>
          <thead>
            <tr>
              <th scope="col">Workspace</th>
              <th scope="col">Spent</th>
            </tr>
          </thead>
          <tbody>
            {busiest.map((workspace) => (
              <tr key={workspace.workspace_id} data-reached={workspace.budget.reached}>
                <td>
                  {workspace.repository}
                  {workspace.path ? `/${workspace.path}` : ""}
                </td>
                <td>
                  <BudgetMeter label="" status={workspace.budget} currency={data.currency} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {data.run.spent.unpriced_tokens > 0 && (
        <p className="muted">
          {formatSpend({ tokens: data.run.spent.unpriced_tokens, cost: null }, null)} of models the
          price table does not price are not in the cost.
        </p>
      )}
    </section>
  );
}
