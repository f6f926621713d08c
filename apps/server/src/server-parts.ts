/** The parts a server is composed of, by the name shutdown orders them with. */
export type ServerPartName =
  | "database"
  | "launcher"
  | "workspace-agent"
  | "providers"
  | "endpoint"
  | "session-hub"
  | "activity-hub"
  | "run-hub"
  | "agent-turns"
  | "streams"
  | "http"
  | "task-worker"
  | "batch-worker";

/** Stages of a shutdown: each stage's parts stop together, once the stage before has stopped. */
export type ShutdownOrder = readonly (readonly ServerPartName[])[];

/**
 * The started parts of a server and how each stops. A start that fails stops what it started,
 * last first, so it leaves no process behind; a running server stops in a given order.
 */
export class ServerParts {
  /** In the order they started. */
  readonly #started = new Map<ServerPartName, () => Promise<void>>();

  /** `name` has started; `stop` stops it. */
  started(name: ServerPartName, stop: () => Promise<void>): void {
    this.#started.set(name, stop);
  }

  /** Stops every started part, the last started first, whatever fails. */
  async undo(): Promise<void> {
    const started = [...this.#started.values()].reverse();
    this.#started.clear();
    for (const stop of started) await stop().catch(() => {});
  }

  /** Stops the started parts `order` names, stage by stage; the first failure ends it. */
  async stop(order: ShutdownOrder): Promise<void> {
    for (const stage of order) {
      await Promise.all(stage.map((name) => this.#started.get(name)?.()));
    }
  }
}
