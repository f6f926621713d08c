import { useCallback, useEffect, useState } from "react";
import { messageOf } from "../api.ts";
import { useReloadOnReconnect } from "../connection.ts";

/**
 * A GET answer kept fresh: loaded now, again every `intervalMs` while `live`, and when the
 * connection comes back; `reloadKey` changing loads it at once (a new run event, say).
 */
export function usePolled<T>(
  /** What names the answer: a change loads it anew (a path, an id). */
  key: string,
  read: () => Promise<T>,
  options: { live: boolean; intervalMs?: number; reloadKey?: unknown },
): { data: T | null; error: string | null } {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<string | null>(null);
  // `read` is a new function on every render; `key` says when it reads something else.
  // biome-ignore lint/correctness/useExhaustiveDependencies: key stands for read
  const load = useCallback(() => {
    read()
      .then((loaded) => {
        setData(loaded);
        setError(null);
      })
      .catch((failure: unknown) => setError(messageOf(failure)));
  }, [key]);
  // biome-ignore lint/correctness/useExhaustiveDependencies: reloadKey is what asks for a reload
  useEffect(load, [load, options.reloadKey]);
  useEffect(() => {
    if (!options.live) return;
    const timer = setInterval(load, options.intervalMs ?? 5_000);
    return () => clearInterval(timer);
  }, [load, options.live, options.intervalMs]);
  useReloadOnReconnect(load);
  return { data, error };
}
