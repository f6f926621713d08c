import type { PendingChange } from "@deckhand/wire";
import { useVirtualizer } from "@tanstack/react-virtual";
import { memo, useCallback, useEffect, useMemo, useRef, useState } from "react";
import { messageOf, server } from "../api.ts";
import { type Highlighter, languageOfPath, useHighlighter } from "../highlight/highlighter.ts";
import {
  commentLine,
  type DiffSide,
  type FileDiffModel,
  fileDiffModel,
  type SplitRow,
  type UnifiedRow,
} from "./diff-rows.ts";
import type { ReviewComment } from "./review-comments.tsx";

type ViewType = "unified" | "split";

export interface ReviewPanelProps {
  sessionId: string;
  /** Bumped when pending changes may have changed: the panel lists them again. */
  version: number;
  onComment: (comment: Omit<ReviewComment, "id">) => void;
  /** The comments queued for the next message: each is marked at its line. */
  comments?: readonly ReviewComment[];
  /** Told how many changes wait for review, whenever that changes (for the pane's tab). */
  onCount?: (count: number) => void;
}

/** Rows drawn beyond the visible ones, so a fast scroll rarely shows blank space. */
const OVERSCAN = 20;
const ROW_HEIGHT = 20;

/** The performance mark a file's diff sets once its first rows are on screen. */
export const FIRST_ROW_MARK = "deckhand:diff-first-row";

interface TreeNode {
  name: string;
  /** Set on files. */
  change?: PendingChange;
  children: Map<string, TreeNode>;
}

function fileTree(changes: PendingChange[]): TreeNode {
  const root: TreeNode = { name: "", children: new Map() };
  for (const change of changes) {
    let node = root;
    const segments = change.path.split("/");
    segments.forEach((segment, index) => {
      let child = node.children.get(segment);
      if (!child) {
        child = { name: segment, children: new Map() };
        node.children.set(segment, child);
      }
      if (index === segments.length - 1) child.change = change;
      node = child;
    });
  }
  return root;
}

function Stats({ model }: { model: FileDiffModel }) {
  return (
    <span className="diff-stats">
      <span className="diff-stats-added">+{model.additions}</span>{" "}
      <span className="diff-stats-deleted">−{model.deletions}</span>
    </span>
  );
}

function TreeList({
  node,
  models,
  onOpen,
}: {
  node: TreeNode;
  models: Map<string, FileDiffModel>;
  onOpen: (path: string) => void;
}) {
  const entries = [...node.children.values()].sort(
    (left, right) =>
      Number(left.change !== undefined) - Number(right.change !== undefined) ||
      left.name.localeCompare(right.name),
  );
  return (
    <ul>
      {entries.map((entry) => {
        const model = entry.change ? models.get(entry.change.id) : undefined;
        return (
          <li key={entry.name}>
            {entry.change ? (
              <button
                type="button"
                className="tree-file"
                onClick={() => onOpen(entry.change!.path)}
                title={`${entry.change.path} by ${entry.change.agent}`}
              >
                <span className="path">{entry.name}</span>
                {model && <Stats model={model} />}
                <span className="muted">{entry.change.agent}</span>
              </button>
            ) : (
              <>
                <span className="tree-directory">{entry.name}/</span>
                <TreeList node={entry} models={models} onOpen={onOpen} />
              </>
            )}
          </li>
        );
      })}
    </ul>
  );
}

const SIGN = { insert: "+", delete: "-", normal: " " } as const;

/** A commented line, by its number and which file's numbering it is in. */
function lineKey(line: number, removed: boolean): string {
  return `${removed ? "old" : "new"}:${line}`;
}

/**
 * A line's number, which is also the button that comments on it: both numbers in the unified
 * view (old, new), one per side in the split view, as GitHub shows them.
 */
function Gutter({
  path,
  side,
  numbers,
  commented,
  onComment,
}: {
  path: string;
  side: DiffSide;
  numbers: "both" | "old" | "new";
  commented: ReadonlySet<string>;
  onComment: (side: DiffSide) => void;
}) {
  const { line, removed } = commentLine(side);
  const marked = commented.has(lineKey(line, removed));
  return (
    <button
      type="button"
      className="diff-gutter"
      data-commented={marked || undefined}
      onClick={() => onComment(side)}
      aria-label={`Comment on ${path} line ${line}${removed ? " (removed)" : ""}${marked ? ", which has a comment" : ""}`}
    >
      <span className="comment-marker" aria-hidden="true">
        {marked ? "●" : ""}
      </span>
      {numbers !== "new" && <span className="diff-number">{side.oldNumber ?? ""}</span>}
      {numbers !== "old" && <span className="diff-number">{side.newNumber ?? ""}</span>}
    </button>
  );
}

/** How a row's text is drawn: highlighted in the file's language once the highlighter is in. */
type Paint = (text: string) => React.ReactNode;

function Code({ side, paint }: { side: DiffSide; paint: Paint }) {
  return (
    <span className="diff-code" data-kind={side.type}>
      <span className="diff-sign" aria-hidden="true">
        {SIGN[side.type]}
      </span>
      <span className="diff-text">{paint(side.content)}</span>
    </span>
  );
}

/** Line by line (only the rows on screen are drawn), so a long file costs what is shown. */
function painter(highlighter: Highlighter | null, language: string | null): Paint {
  if (!highlighter || !language || !highlighter.knows(language)) return (text) => text;
  return (text) => highlighter.highlight(text, language) ?? text;
}

function RowContent({
  row,
  path,
  paint,
  commented,
  onComment,
}: {
  row: UnifiedRow | SplitRow;
  path: string;
  paint: Paint;
  commented: ReadonlySet<string>;
  onComment: (side: DiffSide) => void;
}) {
  if (row.kind === "hunk") return <span className="diff-hunk">{row.header}</span>;
  if (row.kind === "line")
    return (
      <>
        <Gutter path={path} side={row} numbers="both" commented={commented} onComment={onComment} />
        <Code side={row} paint={paint} />
      </>
    );
  return (
    <>
      {(["left", "right"] as const).map((position) => {
        const side = row[position];
        return (
          <span key={position} className="diff-half" data-side={position}>
            {side && (
              <>
                <Gutter
                  path={path}
                  side={side}
                  numbers={position === "left" ? "old" : "new"}
                  commented={commented}
                  onComment={onComment}
                />
                <Code side={side} paint={paint} />
              </>
            )}
          </span>
        );
      })}
    </>
  );
}

/**
 * One file's diff, virtualised: only the rows in view (and a few around them) are in the DOM,
 * so a 50,000-line change scrolls as smoothly as a short one.
 */
const FileDiff = memo(function FileDiff({
  path,
  model,
  view,
  wrap,
  commented,
  onComment,
}: {
  path: string;
  model: FileDiffModel;
  view: ViewType;
  wrap: boolean;
  commented: ReadonlySet<string>;
  onComment: (side: DiffSide) => void;
}) {
  const scrollRef = useRef<HTMLElement>(null);
  const rows = view === "split" ? model.split : model.unified;
  const language = languageOfPath(path);
  const highlighter = useHighlighter(language !== null);
  const paint = useMemo(() => painter(highlighter, language), [highlighter, language]);
  const virtualizer = useVirtualizer({
    count: rows.length,
    getScrollElement: () => scrollRef.current,
    estimateSize: () => ROW_HEIGHT,
    overscan: OVERSCAN,
  });
  // Wrapped rows change height with the view, the width and the wrap setting.
  useEffect(() => {
    void view;
    void wrap;
    virtualizer.measure();
  }, [virtualizer, view, wrap]);
  const items = virtualizer.getVirtualItems();
  const shown = items.length > 0;
  useEffect(() => {
    if (!shown) return;
    requestAnimationFrame(() => performance.mark(FIRST_ROW_MARK, { detail: path }));
  }, [shown, path]);
  if (model.binary) return <p className="muted">Binary file: no lines to show.</p>;
  return (
    <section
      ref={scrollRef}
      className="diff-viewport"
      data-view={view}
      data-wrap={wrap}
      // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling region must be reachable by keyboard to scroll it
      tabIndex={0}
      aria-label={`Diff of ${path}, ${model.additions} added and ${model.deletions} removed lines`}
    >
      <div className="diff-rows" style={{ height: virtualizer.getTotalSize() }}>
        {items.map((item) => {
          const row = rows[item.index]!;
          return (
            <div
              key={item.key}
              data-index={item.index}
              ref={virtualizer.measureElement}
              className="diff-row"
              data-kind={row.kind === "line" ? row.type : row.kind}
              style={{ transform: `translateY(${item.start}px)` }}
            >
              <RowContent
                row={row}
                path={path}
                paint={paint}
                commented={commented}
                onComment={onComment}
              />
            </div>
          );
        })}
      </div>
    </section>
  );
});

function CommentForm({
  path,
  side,
  onAdd,
  onCancel,
}: {
  path: string;
  side: DiffSide;
  onAdd: (text: string) => void;
  onCancel: () => void;
}) {
  const [text, setText] = useState("");
  const { line, removed } = commentLine(side);
  return (
    <form
      className="comment-form"
      onSubmit={(event) => {
        event.preventDefault();
        if (text.trim()) onAdd(text.trim());
      }}
    >
      <label>
        Comment on {path}:{line}
        {removed ? " (removed line)" : ""}
        <textarea
          rows={2}
          value={text}
          // biome-ignore lint/a11y/noAutofocus: the person just asked to write this comment
          autoFocus
          onChange={(event) => setText(event.target.value)}
        />
      </label>
      <pre className="comment-line">{side.content}</pre>
      <div className="actions">
        <button type="submit" className="primary" disabled={!text.trim()}>
          Add comment
        </button>
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

function ChangeSection({
  change,
  model,
  view,
  wrap,
  busy,
  comments,
  onResolve,
  onComment,
}: {
  change: PendingChange;
  model: FileDiffModel;
  view: ViewType;
  wrap: boolean;
  busy: boolean;
  /** This file's queued comments. */
  comments: readonly ReviewComment[];
  onResolve: (change: PendingChange, action: "apply" | "reject") => void;
  onComment: ReviewPanelProps["onComment"];
}) {
  const [commenting, setCommenting] = useState<DiffSide | null>(null);
  const startComment = useCallback((side: DiffSide) => setCommenting(side), []);
  const commented = useMemo(
    () => new Set(comments.map((comment) => lineKey(comment.line, comment.removed))),
    [comments],
  );
  return (
    <section
      className="card change"
      aria-label={`Change to ${change.path}`}
      id={`change-${change.id}`}
      tabIndex={-1}
    >
      <header className="card-header file-header">
        <strong className="path">{change.path}</strong>
        <Stats model={model} />
        <span className="muted">by {change.agent}</span>
      </header>
      <FileDiff
        path={change.path}
        model={model}
        view={view}
        wrap={wrap}
        commented={commented}
        onComment={startComment}
      />
      {comments.length > 0 && (
        <ul className="line-comments" aria-label={`Comments on ${change.path}`}>
          {comments.map((comment) => (
            <li key={comment.id}>
              <span className="comment-marker" aria-hidden="true">
                ●
              </span>{" "}
              <strong>
                Line {comment.line}
                {comment.removed ? " (removed)" : ""}
              </strong>{" "}
              <span className="comment-text">{comment.text}</span>
            </li>
          ))}
        </ul>
      )}
      {commenting && (
        <CommentForm
          key={`${commenting.oldNumber}-${commenting.newNumber}`}
          path={change.path}
          side={commenting}
          onCancel={() => setCommenting(null)}
          onAdd={(text) => {
            onComment({ path: change.path, ...commentLine(commenting), text });
            setCommenting(null);
          }}
        />
      )}
      <div className="actions">
        <button
          type="button"
          className="primary"
          disabled={busy}
          onClick={() => onResolve(change, "apply")}
        >
          Apply {change.path}
        </button>
        <button
          type="button"
          className="danger"
          disabled={busy}
          onClick={() => onResolve(change, "reject")}
        >
          Reject {change.path}
        </button>
      </div>
    </section>
  );
}

/**
 * The session's pending changes for review: a file tree with per-file stats and agents, each
 * file's diff (unified or side by side, wrapped or not), apply or reject per file or all at
 * once, and comments on lines, queued for the next message.
 */
export default function ReviewPanel({
  sessionId,
  version,
  onComment,
  comments = [],
  onCount,
}: ReviewPanelProps) {
  const [changes, setChanges] = useState<PendingChange[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [view, setView] = useState<ViewType>("unified");
  const [wrap, setWrap] = useState(false);
  const load = useCallback(async () => {
    const list = await server.listPendingChanges({
      params: { session_id: sessionId },
      query: { status: "pending" },
    });
    setChanges(list.pending_changes);
    onCount?.(list.pending_changes.length);
  }, [sessionId, onCount]);
  useEffect(() => {
    void version;
    load().catch((failure: unknown) => setError(messageOf(failure)));
  }, [load, version]);

  // Parsed once per diff text, not per render: a 50,000-line diff takes a while to parse.
  const cache = useRef(new Map<string, { diff: string; model: FileDiffModel }>());
  const models = useMemo(() => {
    const next = new Map<string, FileDiffModel>();
    for (const change of changes) {
      const cached = cache.current.get(change.id);
      const model =
        cached && cached.diff === change.diff ? cached.model : fileDiffModel(change.diff);
      cache.current.set(change.id, { diff: change.diff, model });
      next.set(change.id, model);
    }
    return next;
  }, [changes]);
  const tree = useMemo(() => fileTree(changes), [changes]);

  /**
   * Apply all and reject all go file by file through the per-file routes: each applied file is
   * its own commit on the session branch anyway, and a file that fails is named while the
   * others still go through.
   */
  const resolve = async (targets: PendingChange[], action: "apply" | "reject") => {
    setBusy(true);
    setError(null);
    // Where the focus goes once the files are gone: the change after the last one resolved,
    // else the one before, else the heading (never lost to the page's body).
    const last = changes.findIndex((change) => change.id === targets.at(-1)?.id);
    const resolved = new Set(targets.map((change) => change.id));
    const next =
      changes.slice(last + 1).find((change) => !resolved.has(change.id)) ??
      changes
        .slice(0, Math.max(last, 0))
        .reverse()
        .find((change) => !resolved.has(change.id));
    const failures: string[] = [];
    for (const change of targets) {
      try {
        const params = { pending_change_id: change.id };
        await (action === "apply"
          ? server.applyPendingChange({ params })
          : server.rejectPendingChange({ params }));
      } catch (failure) {
        failures.push(`${change.path}: ${messageOf(failure)}`);
      }
    }
    try {
      await load();
    } catch (failure) {
      failures.push(messageOf(failure));
    }
    if (failures.length > 0) setError(failures.join("\n"));
    setBusy(false);
    requestAnimationFrame(() => {
      const target =
        (next && document.getElementById(`change-${next.id}`)) ??
        document.getElementById("review-heading");
      target?.focus({ preventScroll: false });
    });
  };

  const open = (path: string) => {
    const change = changes.find((candidate) => candidate.path === path);
    const section = change && document.getElementById(`change-${change.id}`);
    if (!section) return;
    section.scrollIntoView({ block: "start" });
    section.focus({ preventScroll: true });
  };

  return (
    <section className="review" aria-labelledby="review-heading">
      <h2 id="review-heading" tabIndex={-1}>
        Pending changes ({changes.length})
      </h2>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      {changes.length === 0 ? (
        <p className="muted">No changes waiting for review.</p>
      ) : (
        <>
          <div className="review-toolbar">
            <fieldset className="segmented">
              <legend>Diff view</legend>
              {(["unified", "split"] as const).map((option) => (
                <label key={option}>
                  <input
                    type="radio"
                    name={`diff-view-${sessionId}`}
                    value={option}
                    checked={view === option}
                    onChange={() => setView(option)}
                  />
                  {option === "unified" ? "Unified" : "Split"}
                </label>
              ))}
            </fieldset>
            <label className="checkbox">
              <input
                type="checkbox"
                checked={wrap}
                onChange={(event) => setWrap(event.target.checked)}
              />
              Wrap lines
            </label>
            <div className="actions">
              <button
                type="button"
                className="primary"
                disabled={busy}
                onClick={() => void resolve(changes, "apply")}
              >
                Apply all
              </button>
              <button
                type="button"
                className="danger"
                disabled={busy}
                onClick={() => void resolve(changes, "reject")}
              >
                Reject all
              </button>
            </div>
          </div>
          <nav className="file-tree" aria-label="Changed files">
            <TreeList node={tree} models={models} onOpen={open} />
          </nav>
          {changes.map((change) => (
            <ChangeSection
              key={change.id}
              change={change}
              model={models.get(change.id)!}
              view={view}
              wrap={wrap}
              busy={busy}
              comments={comments.filter((comment) => comment.path === change.path)}
              onResolve={(target, action) => void resolve([target], action)}
              onComment={onComment}
            />
          ))}
        </>
      )}
    </section>
  );
}
