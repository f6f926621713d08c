// The fake's etcd: objects by kind, namespace and name; one resourceVersion counter for all of
// them, as the API server has; and a bounded history of changes that watches replay from a
// resourceVersion, answering 410 Expired for one older than the history holds.
import {
  KINDS,
  type KindName,
  type KubeObject,
  matchesSelector,
  parseLabelSelector,
} from "./fake-kubernetes-objects.ts";

export type WatchEventType = "ADDED" | "MODIFIED" | "DELETED";

interface Change {
  resourceVersion: number;
  kind: KindName;
  type: WatchEventType;
  object: KubeObject;
}

export interface StoreWatcher {
  kind: KindName;
  namespace: string;
  selector: ReturnType<typeof parseLabelSelector>;
  send(type: WatchEventType, object: KubeObject): void;
}

/** How many changes watches can resume from. */
const HISTORY = 1_000;

/** The object as the API returns it in a watch event or a GET: with its kind and version. */
export function withKind(kind: KindName, object: KubeObject): KubeObject {
  return { apiVersion: KINDS[kind].version, kind: KINDS[kind].kind, ...structuredClone(object) };
}

export class FakeKubernetesStore {
  #resourceVersion = 100;
  readonly #objects = new Map<KindName, Map<string, KubeObject>>();
  #history: Change[] = [];
  /** The oldest version a watch can start from (the last compaction). */
  #oldest = 100;
  readonly #watchers = new Set<StoreWatcher>();

  get resourceVersion(): number {
    return this.#resourceVersion;
  }

  get oldestResourceVersion(): number {
    return this.#oldest;
  }

  #bucket(kind: KindName): Map<string, KubeObject> {
    let bucket = this.#objects.get(kind);
    if (bucket === undefined) {
      bucket = new Map();
      this.#objects.set(kind, bucket);
    }
    return bucket;
  }

  get(kind: KindName, namespace: string, name: string): KubeObject | undefined {
    const found = this.#bucket(kind).get(`${namespace}/${name}`);
    return found === undefined ? undefined : structuredClone(found);
  }

  list(kind: KindName, namespace: string | null, selector = ""): KubeObject[] {
    const requirements = parseLabelSelector(selector);
    return [...this.#bucket(kind).values()]
      .filter((object) => namespace === null || object.metadata.namespace === namespace)
      .filter((object) => matchesSelector(object.metadata.labels, requirements))
      .map((object) => structuredClone(object));
  }

  /** Stores a new object (its metadata already filled in) and tells the watchers. */
  add(kind: KindName, object: KubeObject): KubeObject {
    return this.#record(kind, "ADDED", object);
  }

  /** Stores a changed object under a new resourceVersion and tells the watchers. */
  update(kind: KindName, object: KubeObject): KubeObject {
    return this.#record(kind, "MODIFIED", object);
  }

  /** Removes an object; its last state, under a new resourceVersion, goes to the watchers. */
  remove(kind: KindName, namespace: string, name: string): KubeObject | undefined {
    const found = this.#bucket(kind).get(`${namespace}/${name}`);
    if (found === undefined) return undefined;
    return this.#record(kind, "DELETED", found);
  }

  #record(kind: KindName, type: WatchEventType, object: KubeObject): KubeObject {
    this.#resourceVersion += 1;
    const stored = structuredClone(object);
    stored.metadata.resourceVersion = String(this.#resourceVersion);
    const key = `${stored.metadata.namespace}/${stored.metadata.name}`;
    if (type === "DELETED") this.#bucket(kind).delete(key);
    else this.#bucket(kind).set(key, stored);
    this.#history.push({ resourceVersion: this.#resourceVersion, kind, type, object: stored });
    if (this.#history.length > HISTORY) {
      const dropped = this.#history.shift()!;
      this.#oldest = dropped.resourceVersion;
    }
    for (const watcher of this.#watchers) {
      if (this.#matches(watcher, kind, stored)) watcher.send(type, withKind(kind, stored));
    }
    return structuredClone(stored);
  }

  #matches(watcher: StoreWatcher, kind: KindName, object: KubeObject): boolean {
    return (
      watcher.kind === kind &&
      object.metadata.namespace === watcher.namespace &&
      matchesSelector(object.metadata.labels, watcher.selector)
    );
  }

  /**
   * Registers a watcher and replays what it asked for: every matching object as ADDED when no
   * version (or "0") is given, else the changes after that version. Returns null when the
   * version is older than the history (the caller answers 410 Expired).
   */
  watch(watcher: StoreWatcher, fromVersion: string | undefined): (() => void) | null {
    if (fromVersion === undefined || fromVersion === "" || fromVersion === "0") {
      for (const object of this.list(watcher.kind, watcher.namespace)) {
        if (matchesSelector(object.metadata.labels, watcher.selector)) {
          watcher.send("ADDED", withKind(watcher.kind, object));
        }
      }
    } else {
      const from = Number(fromVersion);
      if (!Number.isInteger(from) || from < this.#oldest) return null;
      for (const change of this.#history) {
        if (change.resourceVersion > from && this.#matches(watcher, change.kind, change.object)) {
          watcher.send(change.type, withKind(change.kind, change.object));
        }
      }
    }
    this.#watchers.add(watcher);
    return () => this.#watchers.delete(watcher);
  }

  /** Forgets the history, as etcd compaction does: watches from older versions get 410. */
  compact(): void {
    this.#history = [];
    this.#oldest = this.#resourceVersion;
  }
}
