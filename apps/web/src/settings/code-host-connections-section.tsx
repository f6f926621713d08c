import type { CodeHostConnectionList } from "@deckhand/wire";
import { useEffect, useState } from "react";
import { messageOf, server } from "../api.ts";
import { LoadState } from "../components/load-state.tsx";

/** Where changesets are published, read-only: tokens are named by their variable, never shown. */
export function CodeHostConnectionsSection() {
  const [list, setList] = useState<CodeHostConnectionList | null>(null);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    server
      .listCodeHostConnections()
      .then(setList)
      .catch((failure: unknown) => setError(messageOf(failure)));
  }, []);

  return (
    <section className="card" aria-labelledby="code-hosts-heading">
      <h2 id="code-hosts-heading">Code host connections</h2>
      <p className="muted">
        Where batch changes publish pull requests; set in the server's config.json (
        <code>codeHostConnections</code>).
      </p>
      <LoadState error={error} loading={list === null} />
      {list?.code_host_connections.length === 0 && (
        <p className="muted">None is configured: changesets can be applied as branches only.</p>
      )}
      {list && list.code_host_connections.length > 0 && (
        <div className="table-scroll">
          <table>
            <caption className="visually-hidden">Code host connections</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Type</th>
                <th scope="col">URL</th>
                <th scope="col">Token</th>
                <th scope="col">Publishing</th>
              </tr>
            </thead>
            <tbody>
              {list.code_host_connections.map((connection) => (
                <tr key={connection.name}>
                  <th scope="row">{connection.name}</th>
                  <td>{connection.type}</td>
                  <td>
                    <code>{connection.url}</code>
                  </td>
                  <td>
                    <code>{connection.token_env}</code>{" "}
                    <span className="badge" data-status={connection.token_set ? "ready" : "error"}>
                      {connection.token_set ? "set" : "not set"}
                    </span>
                  </td>
                  <td>{connection.publish_rate_per_minute} changes a minute</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
