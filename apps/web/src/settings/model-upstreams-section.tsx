import type { ModelUpstreamKind, ModelUpstreamList } from "@deckhand/wire";
import { useEffect, useState } from "react";
import { messageOf, server } from "../api.ts";
import { LoadState } from "../components/load-state.tsx";

const KIND_TEXT: Readonly<Record<ModelUpstreamKind, string>> = {
  openai: "OpenAI-compatible",
  anthropic: "Anthropic-compatible",
  gemini: "Gemini (Generative Language API)",
};

/** The model upstreams of config.json, read-only: keys are named by their variable, never shown. */
export function ModelUpstreamsSection() {
  const [list, setList] = useState<ModelUpstreamList | null>(null);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    server
      .listModelUpstreams()
      .then(setList)
      .catch((failure: unknown) => setError(messageOf(failure)));
  }, []);

  return (
    <section className="card" aria-labelledby="upstreams-heading">
      <h2 id="upstreams-heading">Model upstreams</h2>
      <p className="muted">
        Where the model proxy sends each agent type's requests; set in the server's config.json (
        <code>modelUpstreams</code>).
      </p>
      <LoadState error={error} loading={list === null} />
      {list?.model_upstreams.length === 0 && (
        <p className="muted">None is configured: agents reach no model through Deckhand.</p>
      )}
      {list && list.model_upstreams.length > 0 && (
        <div className="table-scroll">
          <table>
            <caption className="visually-hidden">Model upstreams</caption>
            <thead>
              <tr>
                <th scope="col">Agent type</th>
                <th scope="col">Format</th>
                <th scope="col">Base URL</th>
                <th scope="col">Key</th>
              </tr>
            </thead>
            <tbody>
              {list.model_upstreams.map((upstream) => (
                <tr key={upstream.agent_type}>
                  <th scope="row">{upstream.agent_type}</th>
                  <td>
                    {KIND_TEXT[upstream.kind]}
                    <span className="muted"> ({upstream.endpoints.join(", ")})</span>
                  </td>
                  <td>
                    <code>{upstream.base_url}</code>
                  </td>
                  <td>
                    {upstream.api_key_env ? <code>{upstream.api_key_env}</code> : "given directly"}{" "}
                    <span className="badge" data-status={upstream.api_key_set ? "ready" : "error"}>
                      {upstream.api_key_set ? "set" : "not set"}
                    </span>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
