import type { z } from "zod";
import { DbError } from "../errors.ts";

/** What a handler learns about the task it runs. */
export interface TaskContext {
  id: number;
  type: string;
  /** 1 on the first run, 2 on the first retry, and so on. */
  attempt: number;
  maxAttempts: number;
  workerId: string;
  /**
   * Aborted when the worker gives the task up: its lease was lost to another worker, or the
   * worker is shutting down and the task did not finish in time. The task will run again (by
   * this worker only once this handler has returned), so a handler should stop promptly and
   * must be safe to repeat (at-least-once delivery).
   */
  signal: AbortSignal;
}

export interface TaskDefinition<Payload> {
  /** Validates the payload before the handler sees it; an invalid payload fails the task at once. */
  schema?: z.ZodType<Payload>;
  handle(payload: Payload, context: TaskContext): Promise<void>;
}

interface RegisteredTask {
  schema: z.ZodType | undefined;
  handle(payload: unknown, context: TaskContext): Promise<void>;
}

/** Task types a worker can run. Later features register their own types; a worker claims only these. */
export class TaskRegistry {
  readonly #definitions = new Map<string, RegisteredTask>();

  register<Payload>(type: string, definition: TaskDefinition<Payload>): this {
    if (this.#definitions.has(type)) {
      throw new DbError("task_type_duplicate", `Task type "${type}" is already registered.`);
    }
    this.#definitions.set(type, {
      schema: definition.schema,
      handle: definition.handle as RegisteredTask["handle"],
    });
    return this;
  }

  has(type: string): boolean {
    return this.#definitions.has(type);
  }

  types(): string[] {
    return [...this.#definitions.keys()];
  }

  /** Validates the payload and runs the handler for `type`. */
  async run(type: string, payload: unknown, context: TaskContext): Promise<void> {
    const definition = this.#definitions.get(type);
    if (!definition) {
      throw new DbError("task_type_unknown", `No handler is registered for task type "${type}".`);
    }
    let value = payload;
    if (definition.schema) {
      const parsed = definition.schema.safeParse(payload);
      if (!parsed.success) {
        throw new DbError(
          "task_payload_invalid",
          `Payload of task type "${type}" is invalid: ${parsed.error.message}`,
          { cause: parsed.error },
        );
      }
      value = parsed.data;
    }
    await definition.handle(value, context);
  }
}
