import { createServerClient, ServerApiError } from "@deckhand/server-client";
import type { ServerHealth } from "@deckhand/wire";
import { useEffect, useRef, useSyncExternalStore } from "react";
import { storedToken } from "./token.ts";

/**
 * Whether the page can reach its server. One place knows it, so the page shows one banner
 * ("unreachable, reconnecting") instead of a raw fetch error in every section, and every list
 * loads again the moment the server is back instead of keeping a stale error.
 */
export interface ConnectionState {
  reachable: boolean;
  /** Why not, in words: unreachable, or answering but shutting down (or not ready). */
  reason: string | null;
  /** Bumped each time the server comes back: lists and screens load again. */
  reconnects: number;
}

/** How often the server's health is asked while it is away: soon at first, then less often. */
const CHECK_DELAYS_MS = [500, 1_000, 1_000, 2_000, 3_000];

let state: ConnectionState = { reachable: true, reason: null, reconnects: 0 };
const listeners = new Set<() => void>();
let timer: ReturnType<typeof setTimeout> | null = null;
let attempt = 0;
let checking = false;

function set(next: ConnectionState): void {
  state = next;
  for (const listener of listeners) listener();
}

export function connectionState(): ConnectionState {
  return state;
}

export function subscribeConnection(listener: () => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/**
 * The health check's own client: what goes wrong here is what the check reports, so it neither
 * reports trouble again nor asks for a token, as the pages' client does.
 */
const health = createServerClient({ token: storedToken, validateAnswers: false });

/**
 * Asks the server's health and says why it cannot take work, or null when it can: it answered,
 * and its database and queue are up. A 401 counts as reachable: the token prompt handles it, and
 * so does any error the server answers itself; something else answering for it (a proxy's error
 * page) is named by its status.
 */
async function unhealthy(): Promise<string | null> {
  let answer: Partial<ServerHealth>;
  try {
    answer = await health.getHealth(undefined, { cache: "no-store" });
  } catch (error) {
    if (!ServerApiError.isInstance(error) || error.code === "unreachable") {
      return "The server cannot be reached.";
    }
    if (error.status === 401 || error.code !== "unexpected_answer") return null;
    return error.status >= 200 && error.status < 300
      ? null
      : `The server answered ${error.status}.`;
  }
  if (answer.database?.ok === false || answer.queue?.ok === false)
    return "The server is shutting down or not ready yet.";
  return null;
}

async function check(): Promise<void> {
  if (checking) return;
  checking = true;
  timer = null;
  const reason = await unhealthy();
  checking = false;
  if (reason === null) {
    attempt = 0;
    if (!state.reachable) set({ reachable: true, reason: null, reconnects: state.reconnects + 1 });
    return;
  }
  if (state.reachable || state.reason !== reason) set({ ...state, reachable: false, reason });
  const delay = CHECK_DELAYS_MS[Math.min(attempt, CHECK_DELAYS_MS.length - 1)]!;
  attempt += 1;
  timer = setTimeout(() => void check(), delay);
}

/**
 * Something failed in a way that may mean the server is away (a request that never got an
 * answer, a 503, a stream that dropped): the health is checked, and checked again until the
 * server is back.
 */
export function reportTrouble(): void {
  if (timer !== null || checking) return;
  void check();
}

/** Asks again now, for "Retry now". */
export function retryNow(): void {
  if (timer !== null) clearTimeout(timer);
  timer = null;
  attempt = 0;
  void check();
}

export function useConnection(): ConnectionState {
  return useSyncExternalStore(subscribeConnection, connectionState, connectionState);
}

/**
 * Runs `reload` each time the server comes back (not on mount): a screen's list loads again
 * on its own, so an error it showed while the server was away does not outlive the outage.
 */
export function useReloadOnReconnect(reload: () => void): void {
  const { reconnects } = useConnection();
  const latest = useRef(reload);
  latest.current = reload;
  const seen = useRef(reconnects);
  useEffect(() => {
    if (reconnects === seen.current) return;
    seen.current = reconnects;
    latest.current();
  }, [reconnects]);
}
