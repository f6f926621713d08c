import type { Session, SessionUsageResponse, UsageResponse } from "@deckhand/wire";
import { useEffect, useState } from "react";
import { messageOf, server } from "../api.ts";
import { SessionUsageView, UsageTable, UsageTotalsLine } from "./usage-table.tsx";

type Scope = "job" | "session";

type Answer =
  | { scope: "job"; usage: UsageResponse }
  | { scope: "session"; usage: SessionUsageResponse };

/** Model usage the proxy recorded, for one job or for every agent of one session. */
export function UsageSection() {
  const [scope, setScope] = useState<Scope>("session");
  const [id, setId] = useState("");
  const [answer, setAnswer] = useState<Answer | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [sessions, setSessions] = useState<Session[]>([]);

  // Sessions are picked by their title, not by a pasted id.
  useEffect(() => {
    server
      .listAllSessions({ query: { archived: "any" } })
      .then((list) => {
        setSessions(list.sessions);
        setId((current) => current || (list.sessions[0]?.id ?? ""));
      })
      .catch((failure: unknown) => setError(messageOf(failure)));
  }, []);

  const look = async (event: React.FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    setAnswer(null);
    const trimmed = id.trim();
    try {
      if (scope === "job") {
        const usage = await server.getUsage({ query: { job_id: trimmed } });
        setAnswer({ scope, usage });
      } else {
        const usage = await server.getSessionUsage({ params: { session_id: trimmed } });
        setAnswer({ scope, usage });
      }
    } catch (failure) {
      setError(messageOf(failure));
    } finally {
      setBusy(false);
    }
  };

  return (
    <section className="card" aria-labelledby="usage-heading">
      <h2 id="usage-heading">Usage</h2>
      <p className="muted">
        Model requests the proxy forwarded: for one job, or for every agent of one session.
      </p>
      <form className="inline-form" onSubmit={look} aria-label="Look up usage">
        <label>
          Of
          <select
            value={scope}
            onChange={(event) => {
              const next = event.target.value as Scope;
              setScope(next);
              setId(next === "session" ? (sessions[0]?.id ?? "") : "");
              setAnswer(null);
            }}
          >
            <option value="session">a session</option>
            <option value="job">a job</option>
          </select>
        </label>
        {scope === "job" ? (
          <label className="grow">
            Job id
            <input
              value={id}
              onChange={(event) => setId(event.target.value)}
              spellCheck={false}
              required
            />
          </label>
        ) : (
          <span className="grow field">
            <label htmlFor="usage-session">Session</label>
            <select
              id="usage-session"
              value={id}
              onChange={(event) => setId(event.target.value)}
              required
            >
              {sessions.map((session) => (
                <option key={session.id} value={session.id}>
                  {session.title || session.branch}
                </option>
              ))}
            </select>
          </span>
        )}
        <button type="submit" disabled={busy || !id.trim()}>
          Show usage
        </button>
      </form>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      {answer?.scope === "job" && (
        <>
          <UsageTotalsLine totals={answer.usage.totals} />
          <UsageTable
            rows={answer.usage.usage}
            caption={`Requests of job ${answer.usage.job_id}`}
          />
        </>
      )}
      {answer?.scope === "session" && <SessionUsageView usage={answer.usage} />}
    </section>
  );
}
