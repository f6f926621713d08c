import type { PermissionOptionKind } from "@deckhand/wire";
import { type ReactNode, useEffect, useRef } from "react";
import { MessageView } from "../components/message-view.tsx";
import { PermissionCard } from "../components/permission-card.tsx";
import type { PendingPermission, ViewMessage } from "./session-model.ts";
import { useFollowScroll } from "./use-follow-scroll.ts";

export interface ChatPaneProps {
  messages: ViewMessage[];
  permissions: PendingPermission[];
  onAnswer: (permission: PendingPermission, outcome: PermissionOptionKind) => void;
  /** A send or cancel that failed, shown above the composer where it was asked for. */
  error: string | null;
  /** What goes between the log and the composer: the queued review comments. */
  queued: ReactNode;
  /** The composer, given a way to hand the focus back to the log. */
  composer: (leave: () => void) => ReactNode;
}

/**
 * The chat: the message log, which follows new output unless the person scrolled up ("Jump to
 * latest" then), and under it, never covered by anything, the open permission requests, the
 * last error and the composer.
 */
export function ChatPane({
  messages,
  permissions,
  onAnswer,
  error,
  queued,
  composer,
}: ChatPaneProps) {
  const follow = useFollowScroll();
  const log = useRef<HTMLDivElement | null>(null);
  const firstPermission = permissions[0]?.requestId;
  // A new request needs the person: it sits above the composer, and the log's end is shown too.
  useEffect(() => {
    if (firstPermission !== undefined) follow.jumpToLatest();
  }, [firstPermission, follow.jumpToLatest]);
  return (
    <section className="chat" aria-label="Chat">
      <div className="chat-log-frame">
        <div
          className="chat-log"
          role="log"
          aria-label="Messages"
          // biome-ignore lint/a11y/noNoninteractiveTabindex: the log scrolls, and keys must reach it
          tabIndex={0}
          ref={(element) => {
            log.current = element;
            follow.ref(element);
          }}
        >
          {messages.length === 0 && (
            <p className="muted chat-empty">No messages yet: write the first one below.</p>
          )}
          {messages.map((message) => (
            <MessageView key={message.id} message={message} />
          ))}
        </div>
        {!follow.following && (
          <button type="button" className="jump-latest" onClick={follow.jumpToLatest}>
            Jump to latest
          </button>
        )}
      </div>
      <div className="chat-dock">
        {permissions.map((permission, index) => (
          <PermissionCard
            key={permission.requestId}
            permission={permission}
            shortcuts={index === 0}
            onAnswer={(outcome) => onAnswer(permission, outcome)}
          />
        ))}
        {error && (
          <p className="error" role="alert">
            {error}
          </p>
        )}
        {queued}
        {composer(() => log.current?.focus())}
      </div>
    </section>
  );
}
