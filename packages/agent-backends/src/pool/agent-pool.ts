import type { AgentBackend, BackendHealth } from "../backend.ts";

/** A pool entry's key: one live backend per (session, agent). */
export interface AgentPoolKey {
  sessionId: string;
  agent: string;
}

export interface AgentPoolEntryHealth extends BackendHealth, AgentPoolKey {
  /** Milliseconds since the backend was last used. */
  idleMs: number;
  busy: boolean;
}

/** Why a backend was disposed: unused past the idle timeout, `close`/`closeSession`, `shutdown`. */
export type AgentPoolDisposal = "idle" | "closed" | "shutdown";

export interface AgentPoolOptions<CreateContext = undefined> {
  /** Creates the backend for a key on first use, with what the first `use` passed along. */
  create(key: AgentPoolKey, context: CreateContext): Promise<AgentBackend>;
  /** Called after a backend was disposed: revoke its token, mark its session closed, say. */
  onDisposed?(key: AgentPoolKey, reason: AgentPoolDisposal): Promise<void> | void;
  /**
   * Called when a backend not in use is found crashed (its process died between turns), once
   * per crash: a backend that crashes during a use is its user's to report.
   */
  onCrashed?(key: AgentPoolKey, health: BackendHealth): Promise<void> | void;
  /** Backends unused this long are disposed. Defaults to 15 minutes. */
  idleTimeoutMs?: number;
  /** How often idle backends are looked for. Defaults to a tenth of the idle timeout. */
  sweepIntervalMs?: number;
  /** How often backends' health is looked at for crashes between uses. Defaults to 1 s. */
  healthIntervalMs?: number;
  now?: () => number;
}

interface Entry {
  key: AgentPoolKey;
  backend: Promise<AgentBackend>;
  lastUsedAt: number;
  /** Turns (or other uses) in progress; a busy backend is never closed for idleness. */
  uses: number;
  /** Whether the backend was crashed when last looked at (or a use ended), so one crash is reported once. */
  crashed: boolean;
}

function keyOf(key: AgentPoolKey): string {
  return `${key.sessionId}\u0000${key.agent}`;
}

/**
 * Live agent backends keyed by (session, agent): created on first use, disposed after an idle
 * timeout, all disposed on shutdown. Creation is shared, so two turns that arrive together for
 * the same key get the same backend.
 */
export class AgentPool<CreateContext = undefined> {
  readonly #options: AgentPoolOptions<CreateContext>;
  readonly #entries = new Map<string, Entry>();
  readonly #idleTimeoutMs: number;
  readonly #now: () => number;
  #sweep: NodeJS.Timeout | null = null;
  #watch: NodeJS.Timeout | null = null;
  #closed = false;

  constructor(options: AgentPoolOptions<CreateContext>) {
    this.#options = options;
    this.#idleTimeoutMs = options.idleTimeoutMs ?? 15 * 60_000;
    this.#now = options.now ?? Date.now;
    const interval = options.sweepIntervalMs ?? Math.max(1_000, this.#idleTimeoutMs / 10);
    this.#sweep = setInterval(() => void this.sweepIdle(), interval);
    this.#sweep.unref();
    if (options.onCrashed) {
      this.#watch = setInterval(() => void this.checkHealth(), options.healthIntervalMs ?? 1_000);
      this.#watch.unref();
    }
  }

  get size(): number {
    return this.#entries.size;
  }

  /**
   * Runs `work` with the key's backend, creating it first if needed; the backend counts as busy
   * until `work` settles. A backend whose creation failed is forgotten, so the next use retries.
   * `context` reaches `create` when this use creates the backend.
   */
  async use<Result>(
    key: AgentPoolKey,
    work: (backend: AgentBackend) => Promise<Result>,
    context?: CreateContext,
  ): Promise<Result> {
    if (this.#closed) throw new Error("the agent pool is shut down");
    const id = keyOf(key);
    let entry = this.#entries.get(id);
    if (!entry) {
      const created: Entry = {
        key: { ...key },
        backend: this.#options.create(key, context as CreateContext),
        lastUsedAt: this.#now(),
        uses: 0,
        crashed: false,
      };
      created.backend.catch(() => {
        if (this.#entries.get(id) === created) this.#entries.delete(id);
      });
      this.#entries.set(id, created);
      entry = created;
    }
    entry.uses += 1;
    entry.lastUsedAt = this.#now();
    let backend: AgentBackend | null = null;
    try {
      backend = await entry.backend;
      return await work(backend);
    } finally {
      entry.uses -= 1;
      entry.lastUsedAt = this.#now();
      // A crash during the use is the user's to report; only a later one is news.
      if (backend !== null) entry.crashed = backend.health().status === "crashed";
    }
  }

  /** The key's backend if one is live (for cancel and permission answers); never creates one. */
  async peek(key: AgentPoolKey): Promise<AgentBackend | undefined> {
    const entry = this.#entries.get(keyOf(key));
    if (!entry) return undefined;
    try {
      return await entry.backend;
    } catch {
      return undefined;
    }
  }

  /** Disposes the key's backend now (a session closed). */
  async close(key: AgentPoolKey): Promise<void> {
    const id = keyOf(key);
    const entry = this.#entries.get(id);
    if (!entry) return;
    this.#entries.delete(id);
    await this.#dispose(entry, "closed");
  }

  /** Disposes every backend of a session. */
  async closeSession(sessionId: string): Promise<void> {
    const keys = [...this.#entries.values()]
      .filter((entry) => entry.key.sessionId === sessionId)
      .map((entry) => entry.key);
    await Promise.all(keys.map((key) => this.close(key)));
  }

  /**
   * Disposes backends not in use for longer than `idleMs` (the idle timeout unless given);
   * returns how many.
   */
  async sweepIdle(idleMs: number = this.#idleTimeoutMs): Promise<number> {
    const cutoff = this.#now() - idleMs;
    const idle = [...this.#entries.entries()].filter(
      ([, entry]) => entry.uses === 0 && entry.lastUsedAt <= cutoff,
    );
    for (const [id] of idle) this.#entries.delete(id);
    await Promise.all(idle.map(([, entry]) => this.#dispose(entry, "idle")));
    return idle.length;
  }

  /**
   * Looks for backends that crashed while not in use and reports each crash once through
   * `onCrashed`; returns the keys reported. Runs on a timer when `onCrashed` is given.
   */
  async checkHealth(): Promise<AgentPoolKey[]> {
    const reported: AgentPoolKey[] = [];
    for (const entry of [...this.#entries.values()]) {
      if (entry.uses > 0) continue;
      let health: BackendHealth;
      try {
        health = (await entry.backend).health();
      } catch {
        continue;
      }
      const crashed = health.status === "crashed";
      if (entry.uses > 0) continue;
      if (crashed && !entry.crashed && this.#entries.get(keyOf(entry.key)) === entry) {
        entry.crashed = true;
        reported.push(entry.key);
        try {
          await this.#options.onCrashed?.(entry.key, health);
        } catch {
          // Reporting is best effort; the backend's health still says crashed.
        }
      } else if (!crashed) {
        entry.crashed = false;
      }
    }
    return reported;
  }

  async health(): Promise<AgentPoolEntryHealth[]> {
    const now = this.#now();
    const entries = [...this.#entries.values()];
    const healths = await Promise.all(
      entries.map(async (entry) => {
        try {
          return (await entry.backend).health();
        } catch (error) {
          return { status: "crashed", pid: null, lastError: (error as Error).message } as const;
        }
      }),
    );
    return entries.map((entry, index) => ({
      ...healths[index]!,
      ...entry.key,
      idleMs: now - entry.lastUsedAt,
      busy: entry.uses > 0,
    }));
  }

  /** Disposes every backend; the pool takes no more work. */
  async shutdown(): Promise<void> {
    this.#closed = true;
    if (this.#sweep) clearInterval(this.#sweep);
    this.#sweep = null;
    if (this.#watch) clearInterval(this.#watch);
    this.#watch = null;
    const entries = [...this.#entries.values()];
    this.#entries.clear();
    await Promise.all(entries.map((entry) => this.#dispose(entry, "shutdown")));
  }

  async #dispose(entry: Entry, reason: AgentPoolDisposal): Promise<void> {
    try {
      const backend = await entry.backend;
      await backend.dispose();
    } catch {
      // A backend that never started or fails to stop has nothing more to release here.
    }
    await this.#options.onDisposed?.(entry.key, reason);
  }
}
