import type { Session } from "@deckhand/wire";
import { useEffect, useRef, useSyncExternalStore } from "react";
import { useLocation } from "wouter";
import { server } from "../api.ts";
import { announce, newsOf } from "./notify.ts";
import { SessionActivityStream } from "./session-activity-stream.ts";
import {
  isUnread,
  markSeen,
  rememberBaseline,
  seenEventIds,
  subscribePreferences,
} from "./session-preferences.ts";

/** Every session as last heard of: listed, then kept current by the activity stream. */
let sessions: ReadonlyMap<string, Session> = new Map();
const listeners = new Set<() => void>();

function setSessions(next: ReadonlyMap<string, Session>): void {
  sessions = next;
  for (const listener of listeners) listener();
}

function subscribeSessions(listener: () => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/** The session on screen: its route, while the tab is visible. */
function sessionOnScreen(location: string): string | null {
  if (document.visibilityState === "hidden") return null;
  return /^\/sessions\/([^/]+)$/.exec(location)?.[1] ?? null;
}

/**
 * Keeps every session's activity current for the whole app (rendered once, beside the screens):
 * lists sessions whenever the activity stream is live, applies what it pushes, marks the session
 * on screen read, and tells the user (as the notification settings say) when a session elsewhere
 * finishes or needs input.
 */
export function SessionActivityWatcher() {
  const [location, navigate] = useLocation();
  const current = useSyncExternalStore(subscribeSessions, () => sessions);
  const locationRef = useRef(location);
  locationRef.current = location;
  const navigateRef = useRef(navigate);
  navigateRef.current = navigate;

  useEffect(() => {
    let stopped = false;
    const relist = async () => {
      const list = await server.listAllSessions({ query: { archived: "any" } });
      if (stopped) return;
      rememberBaseline(list.sessions);
      setSessions(new Map(list.sessions.map((session) => [session.id, session])));
    };
    let stream: SessionActivityStream | null = null;
    // The list first: without a token it is refused (and the token prompt shows), and a stream
    // opened then would only retry against a 401.
    relist()
      .then(() => {
        if (stopped) return;
        stream = new SessionActivityStream({
          onState: (state) => {
            if (state === "live") relist().catch(() => {});
          },
          onEvent: ({ session }) => {
            const before = sessions.get(session.id);
            // A session first heard of here is new since the list: all of it is news.
            if (before === undefined) rememberBaseline([{ ...session, last_event_id: 0 }]);
            const news = newsOf(before?.activity ?? "idle", session.activity);
            if (news !== null && sessionOnScreen(locationRef.current) !== session.id) {
              announce(session, news, () => navigateRef.current(`/sessions/${session.id}`));
            }
            setSessions(new Map(sessions).set(session.id, session));
          },
        });
      })
      .catch(() => {});
    return () => {
      stopped = true;
      stream?.close();
    };
  }, []);

  // The session on screen is read up to its latest event, now and as events arrive.
  useEffect(() => {
    const mark = () => {
      const onScreen = sessionOnScreen(location);
      const session = onScreen === null ? undefined : current.get(onScreen);
      if (session) markSeen(session.id, session.last_event_id);
    };
    mark();
    document.addEventListener("visibilitychange", mark);
    return () => document.removeEventListener("visibilitychange", mark);
  }, [location, current]);

  return null;
}

export interface SessionActivity {
  sessions: ReadonlyMap<string, Session>;
  /** Last event id seen per session, from this browser's storage. */
  seen: Record<string, number>;
  /** Sessions not archived with events since they were last seen. */
  unreadCount: number;
}

/** The sessions the watcher keeps current, with what this browser has seen of them. */
export function useSessionActivity(): SessionActivity {
  const current = useSyncExternalStore(subscribeSessions, () => sessions);
  const seen = useSyncExternalStore(subscribePreferences, seenEventIds);
  let unreadCount = 0;
  for (const session of current.values()) {
    if (session.archived_at === null && isUnread(session, seen)) unreadCount += 1;
  }
  return { sessions: current, seen, unreadCount };
}
