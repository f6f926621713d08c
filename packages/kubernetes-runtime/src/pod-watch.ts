// Follows the pods of one Job the way informers do: list for the current state and its
// resourceVersion, then watch from that version with bookmarks, so no change between the two is
// missed. A watch the server ends (its timeout, a dropped connection) resumes from the newest
// version seen; one whose version is too old (410 Expired) starts over with a fresh list.
import type { CoreV1Api, V1Pod, Watch } from "@kubernetes/client-node";

export type PodEvent = { type: "pod"; pod: V1Pod } | { type: "deleted"; pod: V1Pod };

export interface PodWatchOptions {
  core: CoreV1Api;
  watch: Watch;
  namespace: string;
  labelSelector: string;
  onEvent: (event: PodEvent) => void;
  /** Told when listing fails; the watch keeps trying until stopped. */
  onError?: (error: unknown) => void;
}

/** The HTTP status of a watch's ERROR event, or of a failed request. */
function statusCode(value: unknown): number | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const record = value as { code?: unknown; statusCode?: unknown };
  if (typeof record.code === "number") return record.code;
  if (typeof record.statusCode === "number") return record.statusCode;
  return undefined;
}

/** How long to wait before watching again after a watch failed (not after a normal end). */
const RETRY_DELAY_MS = 500;

export class PodWatch {
  readonly #options: PodWatchOptions;
  #resourceVersion: string | null = null;
  #controller: AbortController | null = null;
  #started = false;
  #stopped = false;
  #timer: NodeJS.Timeout | null = null;

  constructor(options: PodWatchOptions) {
    this.#options = options;
  }

  /** Lists and starts watching (once); events arrive through `onEvent` until `stop`. */
  start(): void {
    if (this.#started) return;
    this.#started = true;
    void this.#listThenWatch();
  }

  stop(): void {
    this.#stopped = true;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#controller?.abort();
  }

  async #listThenWatch(): Promise<void> {
    if (this.#stopped) return;
    const { core, namespace, labelSelector } = this.#options;
    try {
      const list = await core.listNamespacedPod({ namespace, labelSelector });
      if (this.#stopped) return;
      this.#resourceVersion = list.metadata?.resourceVersion ?? null;
      for (const pod of list.items) this.#options.onEvent({ type: "pod", pod });
    } catch (error) {
      this.#options.onError?.(error);
      this.#retry(() => this.#listThenWatch());
      return;
    }
    await this.#watch();
  }

  async #watch(): Promise<void> {
    if (this.#stopped) return;
    const { namespace, labelSelector } = this.#options;
    let expired = false;
    let failed = false;
    const query: Record<string, string | boolean> = { labelSelector, allowWatchBookmarks: true };
    if (this.#resourceVersion !== null) query.resourceVersion = this.#resourceVersion;
    const done = (error: unknown) => {
      this.#controller = null;
      if (this.#stopped) return;
      if (error !== null && error !== undefined && !expired) {
        failed = true;
        if (statusCode(error) === 410) expired = true;
      }
      if (expired) this.#retry(() => this.#listThenWatch(), 0);
      else this.#retry(() => this.#watch(), failed ? RETRY_DELAY_MS : 0);
    };
    try {
      this.#controller = await this.#options.watch.watch(
        `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods`,
        query,
        (type: string, object: unknown) => {
          if (this.#stopped) return;
          if (type === "ERROR") {
            // A Status: 410 means the version is gone from the server's window; list again.
            if (statusCode(object) === 410) expired = true;
            return;
          }
          const pod = object as V1Pod;
          const version = pod.metadata?.resourceVersion;
          if (version !== undefined) this.#resourceVersion = version;
          if (type === "BOOKMARK") return;
          this.#options.onEvent({ type: type === "DELETED" ? "deleted" : "pod", pod });
        },
        done,
      );
      if (this.#stopped) this.#controller?.abort();
    } catch (error) {
      done(error);
    }
  }

  #retry(action: () => Promise<void>, delayMs = RETRY_DELAY_MS): void {
    if (this.#stopped) return;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.#timer = null;
      void action();
    }, delayMs);
  }
}
