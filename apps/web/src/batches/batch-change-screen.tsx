import type {
  BatchChange,
  BulkChangesetOperationRequest,
  BulkChangesetOperationResult,
  StoredBatchChangeset,
} from "@deckhand/wire";
import { type FormEvent, useCallback, useEffect, useMemo, useState } from "react";
import { Link } from "wouter";
import { messageOf, server } from "../api.ts";
import { ConfirmDialog, type ConfirmRequest } from "../components/confirm-dialog.tsx";
import { useDocumentTitle } from "../components/document-title.ts";
import { LoadState } from "../components/load-state.tsx";
import { useReloadOnReconnect } from "../connection.ts";
import { BatchChangeSpendSummary } from "./batch-change-spend.tsx";
import { BurndownChart } from "./burndown-chart.tsx";
import { ChangesetCard, changesetPlace } from "./changeset-card.tsx";
import { RolloutPanel } from "./rollout-panel.tsx";

/** Changesets shown at once; "select all matching" reaches the rest too. */
const PAGE = 25;
const STATES = ["unpublished", "draft", "open", "merged", "closed", "failed"] as const;

type BulkOperation = "publish" | "close" | "comment";

/**
 * A batch change (every run of one spec name): its counts, burndown, and its changesets, which
 * can be filtered, picked (all that match, not just those on screen) and published, closed or
 * commented on in bulk, each changeset's result shown.
 */
export function BatchChangeScreen({ name }: { name: string }) {
  const [change, setChange] = useState<BatchChange | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [state, setState] = useState<string>("");
  const [repository, setRepository] = useState("");
  const [shown, setShown] = useState(PAGE);
  const [selected, setSelected] = useState<ReadonlySet<string>>(new Set());
  const [comment, setComment] = useState("");
  const [busy, setBusy] = useState(false);
  const [confirming, setConfirming] = useState<ConfirmRequest | null>(null);
  useDocumentTitle(name);
  const [results, setResults] = useState<{
    operation: BulkOperation;
    results: BulkChangesetOperationResult["results"];
  } | null>(null);

  const load = useCallback(
    async (refresh: boolean) => {
      const params = { name };
      setChange(
        await (refresh ? server.refreshBatchChange({ params }) : server.getBatchChange({ params })),
      );
    },
    [name],
  );
  useEffect(() => {
    load(false).catch((failure: unknown) => setError(messageOf(failure)));
  }, [load]);

  useReloadOnReconnect(() => {
    load(false)
      .then(() => setError(null))
      .catch((failure: unknown) => setError(messageOf(failure)));
  });

  const matching = useMemo(() => {
    const needle = repository.trim().toLowerCase();
    return (change?.changesets ?? []).filter(
      (changeset) =>
        (state === "" || changeset.state === state) &&
        (needle === "" || changesetPlace(changeset).toLowerCase().includes(needle)),
    );
  }, [change, state, repository]);
  // What the filter hides is not selected: a bulk action reaches only what is on screen.
  useEffect(() => {
    const shown = new Set(matching.map((changeset) => changeset.id));
    setSelected((current) => {
      const kept = [...current].filter((id) => shown.has(id));
      return kept.length === current.size ? current : new Set(kept);
    });
  }, [matching]);
  const byId = useMemo(
    () => new Map((change?.changesets ?? []).map((changeset) => [changeset.id, changeset])),
    [change],
  );
  const spendOf = useMemo(
    () =>
      new Map((change?.spend.changesets ?? []).map((entry) => [entry.changeset_id, entry.spent])),
    [change],
  );

  const toggle = (changeset: StoredBatchChangeset, on: boolean) => {
    const next = new Set(selected);
    if (on) next.add(changeset.id);
    else next.delete(changeset.id);
    setSelected(next);
  };

  /** Says how many the operation reaches, and runs it once confirmed. */
  const ask = (operation: BulkOperation) => {
    const targets = [...selected].flatMap((id) => byId.get(id) ?? []);
    if (targets.length === 0) return;
    const count = `${targets.length} ${targets.length === 1 ? "changeset" : "changesets"}`;
    const verb = { publish: "Publish", close: "Close", comment: "Comment on" }[operation];
    const places = targets.slice(0, 5).map(changesetPlace);
    setConfirming({
      title: `${verb} ${count}?`,
      body: (
        <>
          <p>
            {operation === "publish"
              ? "Opens a pull request for each on its code host."
              : operation === "close"
                ? "Closes each pull request on its code host."
                : "Posts your comment on each pull request."}
          </p>
          <ul>
            {places.map((place) => (
              <li key={place}>{place}</li>
            ))}
            {targets.length > places.length && <li>and {targets.length - places.length} more</li>}
          </ul>
        </>
      ),
      confirm: `${verb} ${count}`,
      danger: operation === "close",
      onConfirm: () => void run(operation),
    });
  };

  const run = async (operation: BulkOperation) => {
    const changesetIds = [...selected];
    if (changesetIds.length === 0) return;
    const request: BulkChangesetOperationRequest =
      operation === "comment"
        ? { operation, changeset_ids: changesetIds, body: comment }
        : { operation, changeset_ids: changesetIds };
    setBusy(true);
    setError(null);
    try {
      const answer = await server.bulkBatchChangeChangesets({ params: { name }, body: request });
      setResults({ operation, results: answer.results });
      if (operation === "comment") setComment("");
      await load(false);
    } catch (failure) {
      setError(messageOf(failure));
    } finally {
      setBusy(false);
    }
  };

  const refresh = async () => {
    setBusy(true);
    setError(null);
    try {
      await load(true);
    } catch (failure) {
      setError(messageOf(failure));
    } finally {
      setBusy(false);
    }
  };

  const onComment = (event: FormEvent) => {
    event.preventDefault();
    if (comment.trim() !== "") ask("comment");
  };

  if (!change) {
    return (
      <main className="wide">
        <LoadState error={error} loading />
      </main>
    );
  }

  const failedResults = results?.results.filter((result) => !result.ok) ?? [];
  return (
    <main className="wide">
      <ConfirmDialog request={confirming} onClose={() => setConfirming(null)} />
      <nav className="breadcrumb" aria-label="Breadcrumb">
        <Link href="/batches">Batch changes</Link> / {name}
      </nav>
      <header className="screen-header">
        <h1>{name}</h1>
        <button type="button" disabled={busy} onClick={refresh}>
          Refresh from code hosts
        </button>
      </header>
      <dl className="stats-bar" aria-label="Changeset counts">
        {(
          [
            "total",
            "unpublished",
            "draft",
            "open",
            "merged",
            "closed",
            "checks_failing",
            "approved",
          ] as const
        ).map((key) => (
          <div key={key} data-field={key}>
            <dt>{key.replace("_", " ")}</dt>
            <dd>{change.stats[key]}</dd>
          </div>
        ))}
      </dl>
      <RolloutPanel name={name} reloadKey={change} />
      <section aria-labelledby="burndown-heading">
        <h2 id="burndown-heading">Burndown</h2>
        <BurndownChart points={change.burndown} />
      </section>
      <BatchChangeSpendSummary spend={change.spend} />
      <section aria-labelledby="changesets-heading">
        <h2 id="changesets-heading">Changesets</h2>
        <fieldset className="filters">
          <legend className="visually-hidden">Filter changesets</legend>
          <span>
            <label htmlFor="changeset-state-filter">State</label>{" "}
            <select
              id="changeset-state-filter"
              value={state}
              onChange={(event) => {
                setState(event.target.value);
                setShown(PAGE);
              }}
            >
              <option value="">any</option>
              {STATES.map((option) => (
                <option key={option} value={option}>
                  {option}
                </option>
              ))}
            </select>
          </span>
          <span>
            <label htmlFor="changeset-repository-filter">Repository</label>{" "}
            <input
              id="changeset-repository-filter"
              type="search"
              value={repository}
              onChange={(event) => {
                setRepository(event.target.value);
                setShown(PAGE);
              }}
            />
          </span>
        </fieldset>
        <p aria-live="polite" data-testid="selection">
          {matching.length} of {change.changesets.length} changesets match · {selected.size}{" "}
          selected
        </p>
        <div className="actions">
          <button
            type="button"
            onClick={() => setSelected(new Set(matching.map((changeset) => changeset.id)))}
            disabled={matching.length === 0}
          >
            Select all {matching.length} matching
          </button>
          <button
            type="button"
            onClick={() => setSelected(new Set())}
            disabled={selected.size === 0}
          >
            Clear selection
          </button>
          <button
            type="button"
            disabled={busy || selected.size === 0}
            onClick={() => ask("publish")}
          >
            Publish selected
          </button>
          <button
            type="button"
            className="danger"
            disabled={busy || selected.size === 0}
            onClick={() => ask("close")}
          >
            Close selected
          </button>
        </div>
        <form className="inline-form" onSubmit={onComment} aria-label="Comment on selected">
          <label htmlFor="changeset-comment">Comment</label>{" "}
          <textarea
            id="changeset-comment"
            value={comment}
            rows={2}
            onChange={(event) => setComment(event.target.value)}
          />
          <button type="submit" disabled={busy || selected.size === 0 || comment.trim() === ""}>
            Comment on selected
          </button>
        </form>
        {error && (
          <p className="error" role="alert">
            {error}
          </p>
        )}
        {results && (
          <div role="status" className="bulk-results">
            <p>
              {results.operation}: {results.results.length - failedResults.length} of{" "}
              {results.results.length} succeeded
            </p>
            {failedResults.length > 0 && (
              <ul>
                {failedResults.map((result) => {
                  const changeset = byId.get(result.changeset_id);
                  return (
                    <li key={result.changeset_id} className="error">
                      {changeset ? changesetPlace(changeset) : result.changeset_id}: {result.error}
                    </li>
                  );
                })}
              </ul>
            )}
          </div>
        )}
        {matching.length === 0 ? (
          <p className="muted">No changeset matches.</p>
        ) : (
          <ul className="changeset-list">
            {matching.slice(0, shown).map((changeset) => (
              <ChangesetCard
                key={changeset.id}
                changeset={changeset}
                spend={spendOf.get(changeset.id)}
                currency={change.spend.currency}
                selection={{
                  selected: selected.has(changeset.id),
                  onChange: (on) => toggle(changeset, on),
                }}
              />
            ))}
          </ul>
        )}
        {matching.length > shown && (
          <button type="button" onClick={() => setShown(shown + PAGE)}>
            Show more ({matching.length - shown} left)
          </button>
        )}
      </section>
    </main>
  );
}
