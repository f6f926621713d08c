import { errnoCode, errorMessage } from "@deckhand/errors";
import type { ProcessClient } from "@deckhand/process-manager";
import type { FileClient } from "@deckhand/workspace-files";
import type { z } from "zod";
import { AgentBackendError } from "../../errors.ts";

/** What every native tool runs with: the workspace agent's clients and the turn's scope. */
export interface ToolContext {
  /** Scoped to the chat (the client sends its chat id), so the model sees only its processes. */
  processes: ProcessClient;
  /**
   * Built with `worktreeRoot` as its `root`, so the workspace agent confines every file request
   * to the worktree, symlinks resolved against it.
   */
  files: FileClient;
  chatId: string;
  /** Absolute path of the session's worktree; model paths are relative to it. */
  worktreeRoot: string;
  /** The turn's signal: an interrupt stops what a tool is waiting for. */
  signal: AbortSignal;
}

/** A tool the native agent offers the model. */
export interface NativeTool<Schema extends z.ZodType = z.ZodType, Result = unknown> {
  name: string;
  /** Told to the model: what the tool does and when to use it. */
  description: string;
  /** Validates the model's arguments; `parameters` is derived from it. */
  schema: Schema;
  /** JSON Schema of the arguments, as the model API takes it. */
  parameters: Record<string, unknown>;
  execute(args: z.output<Schema>, context: ToolContext): Promise<Result>;
}

/** True for the rejection an aborted request or an aborted signal produces. */
export function isAbortError(error: unknown, signal?: AbortSignal): boolean {
  if (signal?.aborted) return true;
  return (
    error instanceof Error && (error.name === "AbortError" || errnoCode(error) === "ABORT_ERR")
  );
}

/** A process API failure as this package's error, keeping the agent's message for the model. */
export function fromProcessError(
  error: unknown,
  action: string,
  signal?: AbortSignal,
): AgentBackendError {
  if (error instanceof AgentBackendError) return error;
  if (isAbortError(error, signal)) {
    return new AgentBackendError("aborted", `${action} was interrupted`, { cause: error });
  }
  const message = errorMessage(error);
  return new AgentBackendError("process_error", `cannot ${action}: ${message}`, { cause: error });
}
