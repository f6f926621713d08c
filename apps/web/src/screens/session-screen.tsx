import {
  type Chat,
  type ChatList,
  type CreateMessageResponse,
  type MessageList,
  type PermissionOptionKind,
  type ProvidersSnapshot,
  ServerPath,
  type Session,
  serverPath,
} from "@deckhand/wire";
import {
  lazy,
  Suspense,
  useCallback,
  useEffect,
  useMemo,
  useState,
  useSyncExternalStore,
} from "react";
import { Link, useSearchParams } from "wouter";
import { api, messageOf } from "../api.ts";
import { MessageView } from "../components/message-view.tsx";
import { PermissionCard } from "../components/permission-card.tsx";
import { ProcessesPanel } from "../components/processes-panel.tsx";
import {
  messageWithReviewComments,
  QueuedReviewComments,
  useReviewComments,
} from "../review/review-comments.tsx";
import { SessionModel, type ViewMessage } from "../session/session-model.ts";
import { SessionStream, type StreamState } from "../session/session-stream.ts";

/** The review (a virtualised diff viewer) loads in its own chunk, after the chat. */
const ReviewPanel = lazy(() => import("../review/review-panel.tsx"));

/** One empty list: useSyncExternalStore needs the same snapshot until something changes. */
const NO_MESSAGES: ViewMessage[] = [];

function useModel(model: SessionModel | null) {
  const subscribe = useCallback(
    (listener: () => void) => model?.subscribe(listener) ?? (() => {}),
    [model],
  );
  return useSyncExternalStore(
    subscribe,
    () => model?.messages() ?? NO_MESSAGES,
    () => NO_MESSAGES,
  );
}

export function SessionScreen({ sessionId }: { sessionId: string }) {
  const [searchParams] = useSearchParams();
  const [session, setSession] = useState<Session | null>(null);
  const [chat, setChat] = useState<Chat | null>(null);
  const [agents, setAgents] = useState<string[]>([]);
  const [agent, setAgent] = useState<string>(searchParams.get("agent") ?? "");
  const [text, setText] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [streamState, setStreamState] = useState<StreamState>("connecting");
  const [, setTick] = useState(0);
  const reviewComments = useReviewComments(sessionId);

  useEffect(() => {
    let cancelled = false;
    (async () => {
      const loaded = await api<Session>(
        "GET",
        serverPath(ServerPath.session, { session_id: sessionId }),
      );
      const chats = await api<ChatList>(
        "GET",
        serverPath(ServerPath.sessionChats, { session_id: sessionId }),
      );
      const first =
        chats.chats.find((candidate) => candidate.parent_chat_id === null) ??
        (await api<Chat>(
          "POST",
          serverPath(ServerPath.sessionChats, { session_id: sessionId }),
          {},
        ));
      const snapshot = await api<ProvidersSnapshot>(
        "GET",
        `${ServerPath.providersSnapshot}?project_id=${encodeURIComponent(loaded.project_id)}`,
      );
      if (cancelled) return;
      const ready = snapshot.providers
        .filter((provider) => provider.enabled && provider.status === "ready")
        .map((provider) => provider.id);
      setSession(loaded);
      setChat(first);
      setAgents(ready);
      setAgent((current) => (current && ready.includes(current) ? current : (ready[0] ?? "")));
    })().catch((failure: unknown) => setError(messageOf(failure)));
    return () => {
      cancelled = true;
    };
  }, [sessionId]);

  const model = useMemo(() => (chat ? new SessionModel(chat.id) : null), [chat]);
  const messages = useModel(model);

  const loadMessages = useCallback(async () => {
    if (!model) return;
    const list = await api<MessageList>(
      "GET",
      serverPath(ServerPath.chatMessages, { chat_id: model.chatId }),
    );
    model.setStoredMessages(list.messages);
  }, [model]);

  useEffect(() => {
    if (!model) return;
    loadMessages().catch((failure: unknown) => setError(messageOf(failure)));
    let messagesVersion = model.messagesVersion;
    const unsubscribe = model.subscribe(() => {
      setTick((tick) => tick + 1);
      if (model.messagesVersion !== messagesVersion) {
        messagesVersion = model.messagesVersion;
        loadMessages().catch((failure: unknown) => setError(messageOf(failure)));
      }
    });
    // From the start of the session: events rebuild what is streaming and what is asked.
    const stream = new SessionStream(sessionId, {
      onEvent: (event) => model.apply(event),
      onState: setStreamState,
    });
    return () => {
      unsubscribe();
      stream.close();
    };
  }, [model, sessionId, loadMessages]);

  const send = async (event: React.FormEvent) => {
    event.preventDefault();
    const comments = reviewComments.comments;
    if (!chat || !agent || (!text.trim() && comments.length === 0)) return;
    setError(null);
    try {
      await api<CreateMessageResponse>(
        "POST",
        serverPath(ServerPath.chatMessages, { chat_id: chat.id }),
        { agent, text: messageWithReviewComments(text, comments) },
      );
      setText("");
      // Only once sent: a failed send keeps them queued.
      for (const comment of comments) reviewComments.remove(comment.id);
    } catch (failure) {
      setError(messageOf(failure));
    }
  };

  const cancel = async (turnAgent: string) => {
    try {
      await api(
        "POST",
        serverPath(ServerPath.agentCancel, { session_id: sessionId, agent: turnAgent }),
      );
    } catch (failure) {
      setError(messageOf(failure));
    }
  };

  const answer = useCallback(
    (permission: { requestId: string; agent: string }, outcome: PermissionOptionKind) => {
      api(
        "POST",
        serverPath(ServerPath.agentPermission, {
          session_id: sessionId,
          agent: permission.agent,
          request_id: permission.requestId,
        }),
        { outcome },
      ).catch((failure: unknown) => setError(messageOf(failure)));
    },
    [sessionId],
  );

  const running = model ? [...new Set(model.activeTurns.values())] : [];
  const permissions = model ? [...model.permissions.values()] : [];

  return (
    <main className="session-screen">
      <nav aria-label="Breadcrumb" className="breadcrumb">
        <Link href="/">Projects</Link>
        <span aria-hidden="true"> / </span>
        <span>{session?.title || session?.branch || "Session"}</span>
      </nav>
      <header className="screen-header">
        <h1>{session?.title || session?.branch || "Session"}</h1>
        {session && (
          <p className="muted">
            branch <code>{session.branch}</code> · {session.status} ·{" "}
            <span data-stream-state={streamState}>stream {streamState}</span>
            {session.agent && (
              <span className="session-settings">
                {" "}
                · {session.agent}
                {session.model && <> · model {session.model}</>}
                {session.mode && <> · mode {session.mode}</>}
              </span>
            )}
          </p>
        )}
      </header>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      <div className="session-layout">
        <section className="chat" aria-label="Chat">
          <div className="messages" aria-live="polite">
            {messages.map((message) => (
              <MessageView key={message.id} message={message} />
            ))}
          </div>
          {permissions.map((permission, index) => (
            <PermissionCard
              key={permission.requestId}
              permission={permission}
              shortcuts={index === 0}
              onAnswer={(outcome) => answer(permission, outcome)}
            />
          ))}
          <QueuedReviewComments
            comments={reviewComments.comments}
            onRemove={reviewComments.remove}
          />
          <form className="composer" onSubmit={send}>
            <label>
              Agent
              <select value={agent} onChange={(event) => setAgent(event.target.value)}>
                {agents.map((id) => (
                  <option key={id} value={id}>
                    {id}
                  </option>
                ))}
              </select>
            </label>
            <label className="grow">
              Message
              <textarea
                value={text}
                rows={3}
                onChange={(event) => setText(event.target.value)}
                onKeyDown={(event) => {
                  if (event.key === "Enter" && (event.ctrlKey || event.metaKey))
                    event.currentTarget.form?.requestSubmit();
                }}
              />
            </label>
            <div className="actions">
              <button
                type="submit"
                className="primary"
                disabled={!agent || (!text.trim() && reviewComments.comments.length === 0)}
              >
                Send
              </button>
              {running.map((turnAgent) => (
                <button
                  key={turnAgent}
                  type="button"
                  className="danger"
                  onClick={() => void cancel(turnAgent)}
                >
                  Cancel {turnAgent}
                </button>
              ))}
            </div>
          </form>
        </section>
        <Suspense fallback={<p className="muted">Loading the review…</p>}>
          <ReviewPanel
            sessionId={sessionId}
            version={model?.pendingChangesVersion ?? 0}
            onComment={reviewComments.add}
          />
        </Suspense>
        <ProcessesPanel sessionId={sessionId} />
      </div>
    </main>
  );
}
