import type { AgentStepTranscript, UsageResponse } from "@deckhand/wire";
import { useEffect, useState } from "react";
import { messageOf, server } from "../api.ts";

/** A step's own environment as the server sent it: secret values are already redacted there. */
export function StepEnvironment({ env }: { env: Readonly<Record<string, string>> | null }) {
  if (env === null) return <p className="muted">The step has not started.</p>;
  const names = Object.keys(env).sort();
  if (names.length === 0) return <p className="muted">The step sets no variables.</p>;
  return (
    <table className="env-table">
      <caption className="visually-hidden">Environment variables</caption>
      <thead>
        <tr>
          <th scope="col">name</th>
          <th scope="col">value</th>
        </tr>
      </thead>
      <tbody>
        {names.map((name) => (
          <tr key={name}>
            <th scope="row">
              <code>{name}</code>
            </th>
            <td>
              <code>{env[name]}</code>
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

const KIND_LABEL: Record<AgentStepTranscript["entries"][number]["kind"], string> = {
  message: "agent",
  reasoning: "thinking",
  tool_call: "tool",
  tool_result: "result",
  error: "error",
};

/**
 * A `codingAgent` step's transcript (read by the server from the agent's JSON lines) and the
 * model usage the proxy recorded for the workspace job.
 */
export function AgentTranscript({ agent, jobId }: { agent: AgentStepTranscript; jobId: string }) {
  const [usage, setUsage] = useState<UsageResponse["totals"] | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    let live = true;
    server
      .getUsage({ query: { job_id: jobId } })
      .then((loaded) => live && setUsage(loaded.totals))
      .catch((failure: unknown) => live && setError(messageOf(failure)));
    return () => {
      live = false;
    };
  }, [jobId]);
  return (
    <div className="agent-transcript">
      <dl className="stats-bar" aria-label="Token usage">
        <div data-field="requests">
          <dt>model requests</dt>
          <dd>{usage ? usage.requests : "…"}</dd>
        </div>
        <div data-field="input_tokens">
          <dt>input tokens</dt>
          <dd>{usage ? usage.input_tokens : (agent.usage?.input_tokens ?? "…")}</dd>
        </div>
        <div data-field="output_tokens">
          <dt>output tokens</dt>
          <dd>{usage ? usage.output_tokens : (agent.usage?.output_tokens ?? "…")}</dd>
        </div>
      </dl>
      {error && <p className="error">{error}</p>}
      {agent.entries.length === 0 ? (
        <p className="muted">The {agent.type} agent reported nothing yet.</p>
      ) : (
        <ol className="transcript" aria-label={`Transcript of the ${agent.type} agent`}>
          {agent.entries.map((entry, index) => (
            // The transcript only grows: an entry's place is its identity.
            // biome-ignore lint/suspicious/noArrayIndexKey: see above.
            <li key={index} data-kind={entry.kind}>
              <span className="badge">{KIND_LABEL[entry.kind]}</span>{" "}
              {entry.kind === "tool_call" ? <code>{entry.text}</code> : entry.text}
              {entry.detail && <pre className="output">{entry.detail}</pre>}
            </li>
          ))}
        </ol>
      )}
    </div>
  );
}
