import type { Chat, PermissionOptionKind, ProviderEntry, Session } from "@deckhand/wire";
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
import { messageOf, server, unreachableMessage } from "../api.ts";
import { useContentMark } from "../components/content-mark.ts";
import { useDocumentTitle } from "../components/document-title.ts";
import { LoadState } from "../components/load-state.tsx";
import { ProcessesPanel } from "../components/processes-panel.tsx";
import { onTabListKeyDown } from "../components/tab-keys.ts";
import { useReloadOnReconnect } from "../connection.ts";
import {
  messageWithReviewComments,
  QueuedReviewComments,
  useReviewComments,
} from "../review/review-comments.tsx";
import { ChatPane } from "../session/chat-pane.tsx";
import { Composer, type TurnChoice } from "../session/composer.tsx";
import { SessionModel, type ViewMessage } from "../session/session-model.ts";
import { SessionStream, type StreamState } from "../session/session-stream.ts";
import { SessionWorkspace } from "../session/session-workspace.tsx";
import { startingAgent } from "../session/starting-agent.ts";
import { SessionUsagePanel } from "../settings/usage-table.tsx";

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

type SideTab = "review" | "processes" | "usage";

/** The side pane: the review of pending changes, the session's processes and its model usage. */
function SidePane({
  sessionId,
  version,
  onComment,
  comments,
}: {
  sessionId: string;
  version: number;
  onComment: Parameters<typeof ReviewPanel>[0]["onComment"];
  comments: Parameters<typeof ReviewPanel>[0]["comments"];
}) {
  const [tab, setTab] = useState<SideTab>("review");
  const [changes, setChanges] = useState<number | null>(null);
  const [processes, setProcesses] = useState<number | null>(null);
  const tabs: { id: SideTab; label: string; count: number | null }[] = [
    { id: "review", label: "Review", count: changes },
    { id: "processes", label: "Processes", count: processes },
    { id: "usage", label: "Usage", count: null },
  ];
  return (
    <section className="side-pane" aria-label="Review and processes">
      <div role="tablist" aria-label="Side pane" className="pane-tabs" onKeyDown={onTabListKeyDown}>
        {tabs.map((entry) => (
          <button
            key={entry.id}
            type="button"
            role="tab"
            id={`side-tab-${entry.id}`}
            aria-selected={tab === entry.id}
            tabIndex={tab === entry.id ? 0 : -1}
            aria-controls={`side-panel-${entry.id}`}
            onClick={() => setTab(entry.id)}
          >
            {entry.label}
            {entry.count !== null && <span className="tab-count">{entry.count}</span>}
          </button>
        ))}
      </div>
      <div
        role="tabpanel"
        id="side-panel-review"
        aria-labelledby="side-tab-review"
        className="pane-scroll"
        hidden={tab !== "review"}
      >
        <Suspense fallback={<p className="muted">Loading the review…</p>}>
          <ReviewPanel
            sessionId={sessionId}
            version={version}
            onComment={onComment}
            comments={comments}
            onCount={setChanges}
          />
        </Suspense>
      </div>
      <div
        role="tabpanel"
        id="side-panel-processes"
        aria-labelledby="side-tab-processes"
        className="pane-scroll"
        hidden={tab !== "processes"}
      >
        <ProcessesPanel sessionId={sessionId} onCount={setProcesses} />
      </div>
      <div
        role="tabpanel"
        id="side-panel-usage"
        aria-labelledby="side-tab-usage"
        className="pane-scroll"
        hidden={tab !== "usage"}
      >
        {/* Read each time it is opened: usage grows with every turn. */}
        {tab === "usage" && <SessionUsagePanel sessionId={sessionId} />}
      </div>
    </section>
  );
}

/**
 * A session as a workspace: the chat beside the review (stacked on a narrow screen), the
 * composer under the chat with the session's agent, model and mode, and the tab's title and
 * icon saying when the session waits for the person.
 */
export function SessionScreen({ sessionId }: { sessionId: string }) {
  const [searchParams] = useSearchParams();
  const requestedAgent = searchParams.get("agent");
  const [session, setSession] = useState<Session | null>(null);
  const [chat, setChat] = useState<Chat | null>(null);
  const [providers, setProviders] = useState<ProviderEntry[]>([]);
  const [agent, setAgent] = useState<string>("");
  const [loadError, setLoadError] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [streamState, setStreamState] = useState<StreamState>("connecting");
  const [, setTick] = useState(0);
  /** Bumped to load the session again (the server came back after a failed first load). */
  const [loadAttempt, setLoadAttempt] = useState(0);
  const reviewComments = useReviewComments(sessionId);

  useEffect(() => {
    let cancelled = false;
    void loadAttempt;
    (async () => {
      const params = { session_id: sessionId };
      const loaded = await server.getSession({ params });
      const chats = await server.listChats({ params });
      const first =
        chats.chats.find((candidate) => candidate.parent_chat_id === null) ??
        (await server.createChat({ params, body: {} }));
      const snapshot = await server.getProvidersSnapshot({
        query: { project_id: loaded.project_id },
      });
      if (cancelled) return;
      const ready = snapshot.providers.filter(
        (provider) => provider.enabled && provider.status === "ready",
      );
      setLoadError(null);
      setSession(loaded);
      setChat((current) => (current?.id === first.id ? current : first));
      setProviders(ready);
      setAgent((current) =>
        startingAgent(
          current || requestedAgent,
          loaded.agent,
          ready.map((provider) => provider.id),
        ),
      );
    })().catch((failure: unknown) => setLoadError(messageOf(failure)));
    return () => {
      cancelled = true;
    };
  }, [sessionId, requestedAgent, loadAttempt]);

  const model = useMemo(() => (chat ? new SessionModel(chat.id) : null), [chat]);
  const messages = useModel(model);

  const loadMessages = useCallback(async () => {
    if (!model) return;
    const list = await server.listMessages({ params: { chat_id: model.chatId } });
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

  // Back from an outage: the session (its status, a first load that failed) and its stored
  // messages are read again; the stream catches up by itself from its last event id.
  useReloadOnReconnect(() => {
    setLoadAttempt((attempt) => attempt + 1);
    loadMessages()
      // A failed read's error goes; a message that was not sent still says so.
      .then(() => setError((current) => (current === unreachableMessage("GET") ? null : current)))
      .catch((failure: unknown) => setError(messageOf(failure)));
  });

  const send = async (text: string, choice: TurnChoice): Promise<boolean> => {
    const comments = reviewComments.comments;
    if (!chat) return false;
    setError(null);
    try {
      await server.createMessage({
        params: { chat_id: chat.id },
        body: { ...choice, text: messageWithReviewComments(text, comments) },
      });
      // Only once sent: a failed send keeps them queued.
      for (const comment of comments) reviewComments.remove(comment.id);
      return true;
    } catch (failure) {
      setError(messageOf(failure));
      return false;
    }
  };

  const cancel = async (turnAgent: string) => {
    try {
      await server.cancelAgentTurn({ params: { session_id: sessionId, agent: turnAgent } });
    } catch (failure) {
      setError(messageOf(failure));
    }
  };

  const answer = useCallback(
    (permission: { requestId: string; agent: string }, outcome: PermissionOptionKind) => {
      server
        .answerPermission({
          params: {
            session_id: sessionId,
            agent: permission.agent,
            request_id: permission.requestId,
          },
          body: { outcome },
        })
        .catch((failure: unknown) => setError(messageOf(failure)));
    },
    [sessionId],
  );

  const running = model ? [...new Set(model.activeTurns.values())] : [];
  const permissions = model ? [...model.permissions.values()] : [];
  const title = session ? session.title || session.branch : null;
  useDocumentTitle(title, permissions.length > 0 ? "Needs input" : null);
  useContentMark(session !== null && chat !== null, "session");

  if (!session) {
    return (
      <main>
        <LoadState error={loadError} loading />
      </main>
    );
  }

  return (
    <main className="session-screen">
      <header className="session-header">
        <nav aria-label="Breadcrumb" className="breadcrumb">
          <Link href="/sessions">Sessions</Link>
          <span aria-hidden="true"> / </span>
        </nav>
        <h1>{title}</h1>
        <p className="muted session-facts">
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
      </header>
      <SessionWorkspace
        chat={
          <ChatPane
            messages={messages}
            permissions={permissions}
            onAnswer={answer}
            error={error}
            queued={
              <QueuedReviewComments
                comments={reviewComments.comments}
                onRemove={reviewComments.remove}
              />
            }
            composer={(leave) => (
              <Composer
                providers={providers}
                session={session}
                agent={agent}
                onAgent={setAgent}
                running={running}
                queuedComments={reviewComments.comments.length}
                onSend={send}
                onCancel={(turnAgent) => void cancel(turnAgent)}
                onLeave={leave}
              />
            )}
          />
        }
        side={
          <SidePane
            sessionId={sessionId}
            version={model?.pendingChangesVersion ?? 0}
            onComment={reviewComments.add}
            comments={reviewComments.comments}
          />
        }
      />
    </main>
  );
}
