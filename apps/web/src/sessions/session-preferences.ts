import type { Session } from "@deckhand/wire";

/**
 * What this browser remembers about sessions, in localStorage: the last event id seen of each
 * session (what makes one unread) and how to be told when an agent finishes or needs input.
 */

const SEEN_KEY = "deckhand.sessions.seen";
const NOTIFY_KEY = "deckhand.sessions.notify";

export interface NotifyPreferences {
  /** A desktop notification; only once the browser granted the permission. */
  desktop: boolean;
  /** A short tone played with WebAudio. */
  sound: boolean;
}

const listeners = new Set<() => void>();

function readJson<Value>(key: string, fallback: Value): Value {
  try {
    const text = localStorage.getItem(key);
    return text === null ? fallback : { ...fallback, ...(JSON.parse(text) as Value) };
  } catch {
    return fallback;
  }
}

function writeJson(key: string, value: unknown): void {
  try {
    localStorage.setItem(key, JSON.stringify(value));
  } catch {
    // Storage full or refused (private mode): the marker is lost on reload, nothing worse.
  }
  for (const listener of listeners) listener();
}

/** Calls `listener` whenever seen ids or preferences change (for useSyncExternalStore). */
export function subscribePreferences(listener: () => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

let seenCache: Record<string, number> | null = null;

export function seenEventIds(): Record<string, number> {
  seenCache ??= readJson<Record<string, number>>(SEEN_KEY, {});
  return seenCache;
}

/** Records that the session has been seen up to `lastEventId` (never moving backwards). */
export function markSeen(sessionId: string, lastEventId: number): void {
  const seen = seenEventIds();
  if ((seen[sessionId] ?? -1) >= lastEventId) return;
  seenCache = { ...seen, [sessionId]: lastEventId };
  writeJson(SEEN_KEY, seenCache);
}

/**
 * A session this browser has not seen yet starts out read at its current event: unread means
 * "something happened since you last looked", not "everything before you ever looked".
 */
export function rememberBaseline(sessions: readonly Session[]): void {
  const seen = seenEventIds();
  const missing = sessions.filter((session) => seen[session.id] === undefined);
  if (missing.length === 0) return;
  seenCache = { ...seen };
  for (const session of missing) seenCache[session.id] = session.last_event_id;
  writeJson(SEEN_KEY, seenCache);
}

export function isUnread(session: Session, seen: Record<string, number>): boolean {
  const last = seen[session.id];
  return last !== undefined && session.last_event_id > last;
}

let notifyCache: NotifyPreferences | null = null;

export function notifyPreferences(): NotifyPreferences {
  notifyCache ??= readJson<NotifyPreferences>(NOTIFY_KEY, { desktop: false, sound: false });
  return notifyCache;
}

export function setNotifyPreferences(change: Partial<NotifyPreferences>): void {
  notifyCache = { ...notifyPreferences(), ...change };
  writeJson(NOTIFY_KEY, notifyCache);
}
