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

export interface AgentPoolOptions<CreateContext = undefined> {
  /** Creates the backend for a key on first use, with what the first `use` passed along. */
  create(key: AgentPoolKey, context: CreateContext): Promise<AgentBackend>;
  /** Called after a backend was disposed (idle, shutdown, or `close`): revoke its token, say. */
  onDisposed?(key: AgentPoolKey): Promise<void> | void;
  /** Backends unused this long are disposed. Defaults to 15 minutes. */
  idleTimeoutMs?: number;
  /** How often idle backends are looked for. Defaults to a tenth of the idle timeout. */
  sweepIntervalMs?: number;
  now?: () => number;
}

interface Entry {
  key: AgentPoolKey;
  backend: Promise<AgentBackend>;
  lastUsedAt: number;
  /** Turns (or other uses) in progress; a busy backend is never closed for idleness. */
  uses: number;
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
  #closed = false;

  constructor(options: AgentPoolOptions<CreateContext>) {
    this.#options = options;
    this.#idleTimeoutMs = options.idleTimeoutMs ?? 15 * 60_000;
    this.#now = options.now ?? Date.now;
    const interval = options.sweepIntervalMs ?? Math.max(1_000, this.#idleTimeoutMs / 10);
    this.#sweep = setInterval(() => void this.sweepIdle(), interval);
    this.#sweep.unref();
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
      };
      created.backend.catch(() => {
        if (this.#entries.get(id) === created) this.#entries.delete(id);
      });
      this.#entries.set(id, created);
      entry = created;
    }
    entry.uses += 1;
    entry.lastUsedAt = this.#now();
    try {
      return await work(await entry.backend);
    } finally {
      entry.uses -= 1;
      entry.lastUsedAt = this.#now();
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
    await this.#dispose(entry);
  }

  /** Disposes every backend of a session. */
  async closeSession(sessionId: string): Promise<void> {
    const keys = [...this.#entries.values()]
      .filter((entry) => entry.key.sessionId === sessionId)
      .map((entry) => entry.key);
    await Promise.all(keys.map((key) => this.close(key)));
  }

  /** Disposes backends idle for longer than the timeout; returns how many. */
  async sweepIdle(): Promise<number> {
    const cutoff = this.#now() - this.#idleTimeoutMs;
    const idle = [...this.#entries.entries()].filter(
      ([, entry]) => entry.uses === 0 && entry.lastUsedAt <= cutoff,
    );
    for (const [id] of idle) this.#entries.delete(id);
    await Promise.all(idle.map(([, entry]) => this.#dispose(entry)));
    return idle.length;
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
    const entries = [...this.#entries.values()];
    this.#entries.clear();
    await Promise.all(entries.map((entry) => this.#dispose(entry)));
  }

  async #dispose(entry: Entry): Promise<void> {
    try {
      const backend = await entry.backend;
      await backend.dispose();
    } catch {
      // A backend that never started or fails to stop has nothing more to release here.
    }
    await this.#options.onDisposed?.(entry.key);
  }
}
