import type { ChangesetEvent, Spend, StoredBatchChangeset } from "@deckhand/wire";
import { useState } from "react";
import ReactMarkdown from "react-markdown";
import remarkGfm from "remark-gfm";
import { messageOf, server } from "../api.ts";
import { formatSpend } from "../budgets/spend-format.ts";
import { DiffView } from "../components/diff-view.tsx";

const CHECKS: Record<NonNullable<StoredBatchChangeset["checks_state"]>, string> = {
  passing: "checks passed",
  failing: "checks failed",
  pending: "checks pending",
  none: "no checks",
};
const CHECK_STATUS = { passing: "completed", failing: "failed", pending: "pending", none: "" };
const REVIEWS: Record<NonNullable<StoredBatchChangeset["review_state"]>, string> = {
  approved: "approved",
  changes_requested: "changes requested",
  pending: "review pending",
};

export function changesetPlace(changeset: StoredBatchChangeset): string {
  return `${changeset.repository}${changeset.path ? `/${changeset.path}` : ""}`;
}

/** A changeset's state on its host, with its checks and review once it is published. */
export function ChangesetBadges({ changeset }: { changeset: StoredBatchChangeset }) {
  return (
    <span className="badges">
      <span className="badge" data-status={changeset.state} data-field="state">
        {changeset.state}
      </span>
      {changeset.checks_state && (
        <span
          className="badge"
          data-status={CHECK_STATUS[changeset.checks_state]}
          data-field="checks"
        >
          {CHECKS[changeset.checks_state]}
        </span>
      )}
      {changeset.review_state && (
        <span
          className="badge"
          data-status={changeset.review_state === "approved" ? "completed" : "pending"}
          data-field="review"
        >
          {REVIEWS[changeset.review_state]}
        </span>
      )}
      {changeset.mergeable === "conflicting" && (
        <span className="badge" data-status="failed">
          conflicts
        </span>
      )}
    </span>
  );
}

function describeEvent(event: ChangesetEvent): string {
  const payload = event.payload;
  const words = event.type.replaceAll("_", " ");
  if (event.type === "status") {
    const parts = [
      event.external_state,
      payload.checks ? `checks ${String(payload.checks)}` : null,
      payload.review ? `review ${String(payload.review)}` : null,
    ].filter(Boolean);
    return `status: ${parts.join(", ")}`;
  }
  if (typeof payload.error === "string") return `${words}: ${payload.error}`;
  if (typeof payload.number === "number") return `${words} #${payload.number}`;
  return event.external_state ? `${words} (${event.external_state})` : words;
}

/** The changeset's history on its host, loaded when opened. */
function ChangesetEvents({ changeset }: { changeset: StoredBatchChangeset }) {
  const [events, setEvents] = useState<ChangesetEvent[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const load = () => {
    server
      .listChangesetEvents({ params: { changeset_id: changeset.id } })
      .then((loaded) => setEvents(loaded.events))
      .catch((failure: unknown) => setError(messageOf(failure)));
  };
  return (
    <details
      className="timeline"
      onToggle={(event) => {
        if ((event.currentTarget as HTMLDetailsElement).open) load();
      }}
    >
      <summary>Events of {changesetPlace(changeset)}</summary>
      {error && <p className="error">{error}</p>}
      {events === null ? (
        <p className="muted">Loading…</p>
      ) : events.length === 0 ? (
        <p className="muted">No events yet.</p>
      ) : (
        <ol aria-label={`Events of ${changesetPlace(changeset)}`}>
          {events.map((event) => (
            <li key={event.id}>
              <time dateTime={event.created_at}>{new Date(event.created_at).toLocaleString()}</time>{" "}
              {describeEvent(event)}
            </li>
          ))}
        </ol>
      )}
    </details>
  );
}

/**
 * One changeset: what apply will do with it (or did), its state on the host with checks and
 * review, its pull request, the rendered title and body, its diff and its history.
 */
export function ChangesetCard({
  changeset,
  selection,
  spend,
  currency = null,
}: {
  changeset: StoredBatchChangeset;
  /** Given on the batch change screen: the changeset can be picked for bulk operations. */
  selection?: { selected: boolean; onChange: (selected: boolean) => void };
  /** What its workspace's agents spent on models (the batch change screen knows). */
  spend?: Spend | undefined;
  currency?: string | null;
}) {
  const where = changesetPlace(changeset);
  return (
    <li className="card changeset-card" aria-label={`Changeset ${where}`}>
      <div className="card-header">
        {selection && (
          <input
            type="checkbox"
            className="select-changeset"
            aria-label={`Select ${where}`}
            checked={selection.selected}
            onChange={(event) => selection.onChange(event.target.checked)}
          />
        )}
        <h3>{changeset.title}</h3>
        <ChangesetBadges changeset={changeset} />
      </div>
      <dl className="facts">
        <dt>repository</dt>
        <dd>{where}</dd>
        <dt>branch</dt>
        <dd>
          <code>{changeset.branch}</code> onto <code>{changeset.base_branch}</code>
        </dd>
        <dt>changes</dt>
        <dd>
          {changeset.stats.files} files, +{changeset.stats.insertions} −{changeset.stats.deletions}
        </dd>
        {changeset.apply_plan && (
          <>
            <dt>apply will</dt>
            <dd data-field="operation">{changeset.apply_plan.summary}</dd>
          </>
        )}
        <dt>applied</dt>
        <dd data-field="applied">
          {changeset.apply_operation
            ? `${changeset.apply_operation} at ${changeset.applied_commit?.slice(0, 10) ?? "?"}${changeset.pushed ? ", pushed" : ""}`
            : "not yet"}
        </dd>
        {spend !== undefined && spend.requests > 0 && (
          <>
            <dt>model spend</dt>
            <dd data-field="spend">{formatSpend(spend, currency)}</dd>
          </>
        )}
        {changeset.external_url && (
          <>
            <dt>pull request</dt>
            <dd>
              <a href={changeset.external_url} target="_blank" rel="noreferrer">
                #{changeset.external_id}
                <span className="visually-hidden"> of {where}</span>
              </a>
              {changeset.code_host ? ` on ${changeset.code_host}` : ""}
            </dd>
          </>
        )}
      </dl>
      {changeset.error && (
        <p className="error" role="alert">
          {changeset.error}
        </p>
      )}
      {changeset.publish_error && <p className="error">{changeset.publish_error}</p>}
      <div className="markdown">
        <ReactMarkdown remarkPlugins={[remarkGfm]}>{changeset.body}</ReactMarkdown>
      </div>
      <details>
        <summary>Diff of {where}</summary>
        <DiffView diff={changeset.diff} />
      </details>
      {changeset.external_id !== null && <ChangesetEvents changeset={changeset} />}
    </li>
  );
}
