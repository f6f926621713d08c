import type {
  ProviderEntry,
  ProviderStatus,
  ProvidersConfigResponse,
  ProvidersRefreshRequest,
  ProvidersSnapshot,
} from "@deckhand/wire";
import { useCallback, useEffect, useState } from "react";
import { messageOf, server } from "../api.ts";
import { CopyButton } from "../components/code-block.tsx";
import { useReloadOnReconnect } from "../connection.ts";
import { AddAcpAgentForm } from "./add-acp-agent-form.tsx";
import { ProviderDiagnostic } from "./provider-diagnostic.tsx";
import { changedMeanwhile, patchFailureMessage, patchProvidersConfig } from "./providers-config.ts";

/** Each status in words; the badge's colour repeats it, never replaces it. */
const STATUS_TEXT: Record<ProviderStatus, string> = {
  ready: "Ready",
  disabled: "Disabled",
  not_installed: "Not installed",
  error: "Error",
  loading: "Checking…",
  starting: "Starting…",
};

/** Each provider with its status; enable, disable, probe again, diagnose, add a custom one. */
export function ProvidersSection() {
  const [snapshot, setSnapshot] = useState<ProvidersSnapshot | null>(null);
  const [etag, setEtag] = useState<string | null>(null);
  const [busy, setBusy] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);

  const load = useCallback(async () => {
    const [loadedSnapshot, config] = await Promise.all([
      server.getProvidersSnapshot(),
      server.getProvidersConfig(),
    ]);
    setSnapshot(loadedSnapshot);
    setEtag(config.etag);
  }, []);

  useEffect(() => {
    load().catch((failure: unknown) => setError(messageOf(failure)));
  }, [load]);
  useReloadOnReconnect(() => {
    load()
      .then(() => setError(null))
      .catch((failure: unknown) => setError(messageOf(failure)));
  });

  const setEnabled = async (provider: ProviderEntry, enabled: boolean) => {
    setBusy(provider.id);
    setError(null);
    setNotice(null);
    try {
      const config = await patchProvidersConfig(
        { providers: { [provider.id]: { enabled } } },
        etag,
      );
      setEtag(config.etag);
      setSnapshot(await server.getProvidersSnapshot());
      setNotice(`${provider.label} is ${enabled ? "enabled" : "disabled"}.`);
    } catch (failure) {
      setError(patchFailureMessage(failure));
      if (changedMeanwhile(failure)) await load().catch(() => undefined);
    } finally {
      setBusy(null);
    }
  };

  const refresh = async (provider?: ProviderEntry) => {
    setBusy(provider?.id ?? "all");
    setError(null);
    setNotice(null);
    try {
      const request: ProvidersRefreshRequest = {
        force: true,
        ...(provider ? { ids: [provider.id] } : {}),
      };
      setSnapshot(await server.refreshProviders({ body: request }));
      setNotice(provider ? `${provider.label} checked again.` : "Every provider checked again.");
    } catch (failure) {
      setError(messageOf(failure));
    } finally {
      setBusy(null);
    }
  };

  /** The form says "added" itself, beside what was typed. */
  const added = async (config: ProvidersConfigResponse) => {
    setEtag(config.etag);
    setError(null);
    setNotice(null);
    setSnapshot(await server.getProvidersSnapshot());
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
                  {STATUS_TEXT[provider.status]}
                </span>
              </div>
              <p className="muted">
                {provider.id} · {provider.transport}
                {provider.builtin ? "" : " · custom"}
                {provider.version ? ` · ${provider.version}` : ""}
                {provider.current_model ? ` · model ${provider.current_model}` : ""}
              </p>
              {provider.command && (
                <p className="muted">
                  Command: <code>{provider.command.join(" ")}</code>
                </p>
              )}
              {provider.install_hint && provider.status === "not_installed" ? (
                // Said once, as a command to copy (the server's error says the same in words).
                <p className="install-hint">
                  Not installed. Install with <code>{provider.install_hint}</code>{" "}
                  <CopyButton
                    text={provider.install_hint}
                    label={`Copy ${provider.label}'s install command`}
                  />
                </p>
              ) : (
                provider.last_error && <p className="warning">{provider.last_error}</p>
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
                  onClick={() => refresh(provider)}
                >
                  Refresh<span className="visually-hidden"> {provider.label}</span>
                </button>
              </div>
              <ProviderDiagnostic providerId={provider.id} label={provider.label} />
            </li>
          ))}
        </ul>
      )}
      <AddAcpAgentForm
        etag={etag}
        takenIds={snapshot?.providers.map((provider) => provider.id) ?? []}
        onAdded={added}
        onConflict={load}
      />
    </section>
  );
}
