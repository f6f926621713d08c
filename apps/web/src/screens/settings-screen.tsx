import {
  type ProviderEntry,
  type ProvidersConfigPatch,
  type ProvidersConfigResponse,
  type ProvidersRefreshRequest,
  type ProvidersSnapshot,
  ServerPath,
  type UsageResponse,
} from "@deckhand/wire";
import { useCallback, useEffect, useState } from "react";
import { ApiError, api, messageOf } from "../api.ts";
import { NotificationSettings } from "../sessions/notification-settings.tsx";

const MERGE_PATCH = "application/merge-patch+json";

/** Each provider with its status; enable, disable and probe again through the providers API. */
function ProvidersSection() {
  const [snapshot, setSnapshot] = useState<ProvidersSnapshot | null>(null);
  const [etag, setEtag] = useState<string | null>(null);
  const [busy, setBusy] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);

  const load = useCallback(async () => {
    const [loadedSnapshot, config] = await Promise.all([
      api<ProvidersSnapshot>("GET", ServerPath.providersSnapshot),
      api<ProvidersConfigResponse>("GET", ServerPath.providersConfig),
    ]);
    setSnapshot(loadedSnapshot);
    setEtag(config.etag);
  }, []);

  useEffect(() => {
    load().catch((failure: unknown) => setError(messageOf(failure)));
  }, [load]);

  const setEnabled = async (provider: ProviderEntry, enabled: boolean) => {
    setBusy(provider.id);
    setError(null);
    setNotice(null);
    try {
      const patch: ProvidersConfigPatch = { providers: { [provider.id]: { enabled } } };
      const config = await api<ProvidersConfigResponse>(
        "PATCH",
        ServerPath.providersConfig,
        patch,
        {
          contentType: MERGE_PATCH,
          // The version this screen was drawn from: a change made elsewhere since is refused (412).
          ...(etag ? { headers: { "If-Match": etag } } : {}),
        },
      );
      setEtag(config.etag);
      setSnapshot(await api<ProvidersSnapshot>("GET", ServerPath.providersSnapshot));
      setNotice(`${provider.label} is ${enabled ? "enabled" : "disabled"}.`);
    } catch (failure) {
      if (failure instanceof ApiError && failure.status === 412) {
        setError(
          "Someone else changed providers.json since this page loaded it, so nothing was changed. " +
            "The current settings are shown now: check them and try again.",
        );
        await load().catch(() => undefined);
      } else {
        setError(messageOf(failure));
      }
    } finally {
      setBusy(null);
    }
  };

  const refresh = async (ids?: string[]) => {
    setBusy(ids?.[0] ?? "all");
    setError(null);
    setNotice(null);
    try {
      const request: ProvidersRefreshRequest = { force: true, ...(ids ? { ids } : {}) };
      setSnapshot(await api<ProvidersSnapshot>("POST", ServerPath.providersRefresh, request));
    } catch (failure) {
      setError(messageOf(failure));
    } finally {
      setBusy(null);
    }
  };

  return (
    <section className="card" aria-labelledby="providers-heading">
      <div className="card-header">
        <h2 id="providers-heading">Providers</h2>
        <button type="button" disabled={busy !== null} onClick={() => refresh()}>
          Refresh all
        </button>
      </div>
      <p className="muted">
        The agents sessions and batch steps can use, from the server's providers.json.
      </p>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      {notice && (
        <p className="notice" role="status">
          {notice}
        </p>
      )}
      {snapshot?.diagnostics.map((diagnostic) => (
        <p key={`${diagnostic.field}:${diagnostic.message}`} className="warning">
          {diagnostic.field ? `${diagnostic.field}: ` : ""}
          {diagnostic.message}
        </p>
      ))}
      {snapshot === null && !error && <p className="muted">Loading…</p>}
      {snapshot && (
        <ul className="provider-list" aria-label="Providers">
          {snapshot.providers.map((provider) => (
            <li key={provider.id} aria-label={`Provider ${provider.label}`}>
              <div className="card-header">
                <h3>{provider.label}</h3>
                <span className="badge" data-status={provider.status}>
                  {provider.status}
                </span>
              </div>
              <p className="muted">
                {provider.id} · {provider.transport}
                {provider.version ? ` · ${provider.version}` : ""}
                {provider.current_model ? ` · model ${provider.current_model}` : ""}
              </p>
              {provider.last_error && <p className="warning">{provider.last_error}</p>}
              {provider.install_hint && provider.status === "not_installed" && (
                <p className="muted">
                  Install: <code>{provider.install_hint}</code>
                </p>
              )}
              <div className="actions">
                <button
                  type="button"
                  disabled={busy !== null}
                  onClick={() => setEnabled(provider, !provider.enabled)}
                >
                  {provider.enabled ? "Disable" : "Enable"}
                  <span className="visually-hidden"> {provider.label}</span>
                </button>
                <button
                  type="button"
                  disabled={busy !== null || !provider.enabled}
                  onClick={() => refresh([provider.id])}
                >
                  Refresh<span className="visually-hidden"> {provider.label}</span>
                </button>
              </div>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

/** Model usage the proxy recorded for one job. */
function UsageSection() {
  const [jobId, setJobId] = useState("");
  const [usage, setUsage] = useState<UsageResponse | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const look = async (event: React.FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      setUsage(
        await api<UsageResponse>(
          "GET",
          `${ServerPath.usage}?${new URLSearchParams({ job_id: jobId.trim() })}`,
        ),
      );
    } catch (failure) {
      setError(messageOf(failure));
    } finally {
      setBusy(false);
    }
  };

  return (
    <section className="card" aria-labelledby="usage-heading">
      <h2 id="usage-heading">Usage per job</h2>
      <form className="inline-form" onSubmit={look} aria-label="Look up usage">
        <label className="grow">
          Job id
          <input value={jobId} onChange={(event) => setJobId(event.target.value)} required />
        </label>
        <button type="submit" disabled={busy || !jobId.trim()}>
          Show usage
        </button>
      </form>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      {usage && (
        <>
          <p>
            {usage.totals.requests} requests · {usage.totals.input_tokens} input tokens ·{" "}
            {usage.totals.output_tokens} output tokens · {usage.totals.total_tokens} in total
          </p>
          {usage.usage.length > 0 && (
            <div className="table-scroll">
              <table>
                <caption className="visually-hidden">Requests of job {usage.job_id}</caption>
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
                  {usage.usage.map((row) => (
                    <tr key={`${row.created_at}-${row.endpoint}-${row.request_bytes}`}>
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
          )}
        </>
      )}
    </section>
  );
}

/** Providers, model upstreams and usage. */
export function SettingsScreen() {
  return (
    <main>
      <header className="screen-header">
        <h1>Settings</h1>
      </header>
      <ProvidersSection />
      <section className="card" aria-labelledby="upstreams-heading">
        <h2 id="upstreams-heading">Model upstreams</h2>
        <p className="muted">
          Upstreams are set in the server's config.json (<code>modelUpstreams</code>); the API does
          not show them yet, so they cannot be listed here.
        </p>
      </section>
      <UsageSection />
      <NotificationSettings />
    </main>
  );
}
