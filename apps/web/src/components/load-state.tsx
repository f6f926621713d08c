/**
 * What a screen or section shows while its data loads, or why it could not: one component, so
 * every place says it alike (an alert for screen readers, a muted "Loading…" otherwise).
 */
export function LoadState({ error, loading }: { error: string | null; loading: boolean }) {
  if (error) {
    return (
      <p className="error" role="alert">
        {error}
      </p>
    );
  }
  return loading ? <p className="muted">Loading…</p> : null;
}
