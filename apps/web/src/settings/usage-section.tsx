import {
  ServerPath,
  type SessionUsageResponse,
  serverPath,
  type UsageResponse,
} from "@deckhand/wire";
import { useState } from "react";
import { api, messageOf } from "../api.ts";
import { UsageTable, UsageTotalsLine } from "./usage-table.tsx";

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

  const look = async (event: React.FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    setAnswer(null);
    const trimmed = id.trim();
    try {
      if (scope === "job") {
        const usage = await api<UsageResponse>(
          "GET",
          `${ServerPath.usage}?${new URLSearchParams({ job_id: trimmed })}`,
        );
        setAnswer({ scope, usage });
      } else {
        const usage = await api<SessionUsageResponse>(
          "GET",
          serverPath(ServerPath.sessionUsage, { session_id: trimmed }),
        );
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
          <select value={scope} onChange={(event) => setScope(event.target.value as Scope)}>
            <option value="session">a session</option>
            <option value="job">a job</option>
          </select>
        </label>
        <label className="grow">
          {scope === "job" ? "Job id" : "Session id"}
          <input
            value={id}
            onChange={(event) => setId(event.target.value)}
            spellCheck={false}
            required
          />
        </label>
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
      {answer?.scope === "session" && (
        <>
          <UsageTotalsLine totals={answer.usage.totals} />
          {answer.usage.jobs.length === 0 ? (
            <p className="muted">No agent has run in this session yet.</p>
          ) : (
            <ul className="usage-jobs" aria-label="Agents of the session">
              {answer.usage.jobs.map((job) => (
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
          <UsageTable
            rows={answer.usage.usage}
            caption={`Requests of session ${answer.usage.session_id}`}
          />
        </>
      )}
    </section>
  );
}
