import { ProcessClient, ProcessClientError } from "@deckhand/process-manager";
import {
  type ProcessInfo,
  ProcessLimits,
  type ProcessOutputResponse,
  type ProcessSignalName,
  SESSION_PROCESS_WAIT_CAP_MS,
  type SessionProcessOutputQuery,
  type SignalProcessResponse,
} from "@deckhand/wire";
import type { ChatService } from "../chats/chat-service.ts";
import { SessionsError } from "../sessions-error.ts";

export interface SessionProcessesOptions {
  /** The session's chats: the workspace agent scopes processes by chat. */
  chats: Pick<ChatService, "list">;
  /** The workspace agent the session's agents start processes through; null when none runs. */
  workspaceAgent: { url: string; token: string | null } | null;
}

/**
 * A session's processes as a person sees them: every process the workspace agent runs for one of
 * the session's chats. The agent scopes processes by chat; a session owns several chats, so the
 * scoping to a session is done here, and a process of another session's chat is not found.
 */
export class SessionProcesses {
  readonly #chats: SessionProcessesOptions["chats"];
  /** Unscoped: sees every chat's processes, so that this class can scope them by session. */
  readonly #client: ProcessClient | null;

  constructor(options: SessionProcessesOptions) {
    this.#chats = options.chats;
    const agent = options.workspaceAgent;
    this.#client =
      agent === null
        ? null
        : new ProcessClient({ baseUrl: agent.url, token: agent.token ?? undefined });
  }

  /** The session's processes, newest first; a `not_found` for an unknown session. */
  async list(sessionId: string): Promise<ProcessInfo[]> {
    const chatIds = await this.#chatIds(sessionId);
    if (this.#client === null || chatIds.size === 0) return [];
    const { processes } = await this.#call(() =>
      this.#client!.list({ limit: ProcessLimits.maxListLimit }),
    );
    return processes.filter((process) => process.chat_id !== null && chatIds.has(process.chat_id));
  }

  /**
   * A process's output: a snapshot, or with `wait` a long poll (new output after `cursor`, or the
   * exit without one) bounded by `SESSION_PROCESS_WAIT_CAP_MS`.
   */
  async output(
    sessionId: string,
    processId: string,
    query: SessionProcessOutputQuery,
    signal?: AbortSignal,
  ): Promise<ProcessOutputResponse> {
    const client = await this.#owned(sessionId, processId);
    return this.#call(
      () =>
        client.output(processId, {
          ...(query.cursor === undefined ? {} : { cursor: query.cursor }),
          ...(query.wait
            ? { wait: true, timeoutMs: query.timeout_ms ?? SESSION_PROCESS_WAIT_CAP_MS }
            : {}),
          ...(signal === undefined ? {} : { signal }),
        }),
      processId,
    );
  }

  /** Signals the process's group; a `conflict` once nothing in it is left. */
  async signal(
    sessionId: string,
    processId: string,
    name: ProcessSignalName,
  ): Promise<SignalProcessResponse> {
    const client = await this.#owned(sessionId, processId);
    return this.#call(() => client.signal(processId, name), processId);
  }

  async #chatIds(sessionId: string): Promise<Set<string>> {
    const chats = await this.#chats.list(sessionId);
    return new Set(chats.map((chat) => chat.id));
  }

  /** The client to reach a process of this session with; a `not_found` for anyone else's. */
  async #owned(sessionId: string, processId: string): Promise<ProcessClient> {
    const processes = await this.list(sessionId);
    if (this.#client === null || !processes.some((process) => process.id === processId)) {
      throw new SessionsError(
        "not_found",
        `no process with id ${JSON.stringify(processId)} in session ${sessionId}; list the session's processes to see their ids`,
      );
    }
    return this.#client;
  }

  /** The workspace agent's refusals, as this package's errors; its absence stays a failure. */
  async #call<T>(operation: () => Promise<T>, processId?: string): Promise<T> {
    try {
      return await operation();
    } catch (error) {
      if (!(error instanceof ProcessClientError) || error.status === 0) throw error;
      if (error.code === "not_found") {
        throw new SessionsError(
          "not_found",
          processId === undefined
            ? error.message
            : `process ${processId} is gone from the workspace agent (exited processes are reaped after a while)`,
          { cause: error },
        );
      }
      if (error.code === "conflict") {
        throw new SessionsError("conflict", error.message, { cause: error });
      }
      if (error.code === "invalid_request") {
        throw new SessionsError("invalid_request", error.message, { cause: error });
      }
      throw error;
    }
  }
}
