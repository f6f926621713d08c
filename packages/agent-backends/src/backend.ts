import type { AgentEvent, PermissionOptionKind, StopReason } from "@deckhand/wire";

/**
 * The contract every agent backend (an ACP agent process, Deckhand's native agent) implements.
 * One backend instance serves one (session, agent) pair; the pool creates and disposes them.
 */

/** Where a backend works and how it reaches the workspace agent and the model proxy. */
export interface AgentSessionContext {
  /** Deckhand's session id (the worktree's session). */
  sessionId: string;
  /** The chat the turns belong to; processes started for it carry this chat id. */
  chatId: string;
  /** Absolute path of the session worktree, as the workspace agent sees it. */
  worktreePath: string;
  /** The workspace agent serving the worktree. */
  workspaceAgent: { url: string; token: string | null };
  /**
   * The model-provider proxy for this agent: base URL already ending in `/<agent-type>`, a
   * scoped token and the job id it is bound to.
   */
  modelProxy: { url: string; token: string; jobId: string } | null;
  /** The agent's own session id from an earlier run, to resume; null for a new session. */
  resumeSessionId: string | null;
}

export interface EnsureSessionResult {
  /** The agent's own session id (store it in `agent_sessions.resume_session_id`). */
  agentSessionId: string;
  /** True when an earlier session was resumed; false when a new one had to be started. */
  resumed: boolean;
}

export interface PromptInput {
  /** The assistant message the turn's events belong to (`message_id` of each event). */
  messageId: string;
  text: string;
  /** Called for each event, in order; awaited, so a slow consumer slows the turn. */
  onEvent(event: AgentEvent): Promise<void> | void;
  signal?: AbortSignal;
  /**
   * The model this turn asks for (an id from the provider's snapshot); the agent's current one
   * when absent. It stays the agent's model for later turns that name none.
   */
  model?: string | null;
  /** The mode this turn runs in (an id from the provider's snapshot); kept like `model`. */
  mode?: string | null;
}

export interface PromptResult {
  stopReason: StopReason;
  /** The turn's final answer text, concatenated. */
  text: string;
}

/** A user's answer to a `permission_request` event. */
export interface PermissionAnswer {
  requestId: string;
  /** The option the user chose, by its kind; `cancelled` withdraws the request. */
  outcome: PermissionOptionKind | "cancelled";
}

export interface BackendHealth {
  status: "idle" | "active" | "crashed" | "closed";
  /** The agent process id, when the backend runs one. */
  pid: number | null;
  lastError: string | null;
}

export interface AgentBackend {
  /** Starts (or resumes) the agent's session; idempotent while the session is live. */
  ensureSession(): Promise<EnsureSessionResult>;
  /** Runs one turn, streaming events through `onEvent`; resolves with its stop reason. */
  prompt(input: PromptInput): Promise<PromptResult>;
  /** Cancels the running turn (pending permission requests resolve as cancelled). */
  cancel(): Promise<void>;
  respondToPermission(answer: PermissionAnswer): Promise<void>;
  /** Ends the agent's session; the backend may be started again with `ensureSession`. */
  closeSession(): Promise<void>;
  /** Stops everything the backend holds (processes, connections); final. */
  dispose(): Promise<void>;
  health(): BackendHealth;
}
