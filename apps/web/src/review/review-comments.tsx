import { useCallback, useEffect, useState } from "react";

/** A reviewer's comment on one line of a pending change, waiting to go with the next message. */
export interface ReviewComment {
  id: string;
  path: string;
  line: number;
  /** The line was deleted: `line` is its number in the old file. */
  removed: boolean;
  text: string;
}

/**
 * How a comment reads in the message: `path:line — comment` as a quote of its own (each of its
 * lines quoted, as written), so two comments stay two items rather than one paragraph.
 */
export function formatReviewComment(comment: ReviewComment): string {
  const where = `${comment.path}:${comment.line}${comment.removed ? " (removed line)" : ""}`;
  const lines = comment.text.trim().split(/\r?\n/);
  return [`> ${where} — ${lines[0]}`, ...lines.slice(1).map((line) => `> ${line}`)].join("\n");
}

/** The message to send: the queued comments, a blank line apart, then what the person wrote. */
export function messageWithReviewComments(text: string, comments: ReviewComment[]): string {
  if (comments.length === 0) return text;
  const block = ["Review comments:", ...comments.map(formatReviewComment)].join("\n\n");
  return text.trim() ? `${block}\n\n${text}` : block;
}

function storageKey(sessionId: string): string {
  return `deckhand.review-comments.${sessionId}`;
}

function loadComments(sessionId: string): ReviewComment[] {
  try {
    const stored = sessionStorage.getItem(storageKey(sessionId));
    return stored ? (JSON.parse(stored) as ReviewComment[]) : [];
  } catch {
    return [];
  }
}

/**
 * A session's queued review comments. They are kept in sessionStorage, so a reload of the tab
 * does not lose them before they are sent.
 */
export function useReviewComments(sessionId: string) {
  const [comments, setComments] = useState<ReviewComment[]>(() => loadComments(sessionId));
  useEffect(() => setComments(loadComments(sessionId)), [sessionId]);
  const update = useCallback(
    (change: (current: ReviewComment[]) => ReviewComment[]) =>
      setComments((current) => {
        const next = change(current);
        try {
          if (next.length === 0) sessionStorage.removeItem(storageKey(sessionId));
          else sessionStorage.setItem(storageKey(sessionId), JSON.stringify(next));
        } catch {
          // Storage full or disabled: the queue still lives in the page.
        }
        return next;
      }),
    [sessionId],
  );
  return {
    comments,
    add: useCallback(
      (comment: Omit<ReviewComment, "id">) =>
        update((current) => [...current, { ...comment, id: `${Date.now()}-${Math.random()}` }]),
      [update],
    ),
    remove: useCallback(
      (id: string) => update((current) => current.filter((comment) => comment.id !== id)),
      [update],
    ),
  };
}

/** The queued comments above the composer, each removable, so the person sees what goes out. */
export function QueuedReviewComments({
  comments,
  onRemove,
}: {
  comments: ReviewComment[];
  onRemove: (id: string) => void;
}) {
  if (comments.length === 0) return null;
  return (
    <section className="queued-comments" aria-label="Review comments for the next message">
      <p className="muted">Sent with your next message:</p>
      <ul>
        {comments.map((comment) => (
          <li key={comment.id}>
            <code>
              {comment.path}:{comment.line}
              {comment.removed ? " (removed)" : ""}
            </code>{" "}
            <span className="comment-text">{comment.text}</span>
            <button
              type="button"
              className="link-button"
              onClick={() => onRemove(comment.id)}
              aria-label={`Remove comment on ${comment.path}:${comment.line}`}
            >
              Remove
            </button>
          </li>
        ))}
      </ul>
    </section>
  );
}
