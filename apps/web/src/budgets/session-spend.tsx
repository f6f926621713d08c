import type { SessionSpend as SessionSpendAnswer } from "@deckhand/wire";
import { server } from "../api.ts";
import { BudgetMeter } from "./budget-meter.tsx";
import { usePolled } from "./use-polled.ts";

/** A session's model spend against its budget (and the server's day), refreshed as it goes. */
export function SessionSpend({ sessionId }: { sessionId: string }) {
  const { data, error } = usePolled<SessionSpendAnswer>(
    sessionId,
    () => server.getSessionSpend({ params: { session_id: sessionId } }),
    { live: true, intervalMs: 10_000 },
  );
  if (error !== null) return <p className="muted">Model spend: {error}</p>;
  if (data === null) return null;
  return (
    <div className="session-spend">
      <BudgetMeter label="This session" status={data.session} currency={data.currency} />
      {data.day.limit !== null && (
        <BudgetMeter label="The server today" status={data.day} currency={data.currency} />
      )}
    </div>
  );
}
