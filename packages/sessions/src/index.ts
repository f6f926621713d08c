export {
  type AgentBackendFactoryOptions,
  agentBackendFactory,
  DEFAULT_NATIVE_MODEL,
} from "./agent-backend-factory.ts";
export {
  type AgentCatalog,
  type AgentChoice,
  checkAgentChoice,
} from "./agent-choice.ts";
export {
  AGENT_TURN_TASK,
  type AgentTurnPayload,
  AgentTurnPayloadSchema,
  enqueueAgentTurn,
} from "./agent-turn-task.ts";
export {
  AGENT_CONTROL_CHANNEL,
  AgentTurns,
  type AgentTurnsOptions,
  assistantMessageId,
  type BackendFactory,
  type BackendRequest,
  INTERRUPTED_ERROR,
  NATIVE_AGENT_TYPE,
} from "./agent-turns.ts";
export { DbPermissionMemory } from "./permission-memory.ts";
export { type SessionState, sessionStates } from "./session-activity.ts";
export { SessionActivityHub, type SessionActivityHubOptions } from "./session-activity-hub.ts";
export { SessionBudgetScopes } from "./session-budget-scopes.ts";
export {
  appendSessionEvent,
  appendSessionEvents,
  publishSessionEvent,
  type QueuedEvent,
  readSessionEvents,
  SESSION_EVENTS_CHANNEL,
  SessionEventWriter,
  type SessionEventWriterOptions,
  SessionStreamHub,
} from "./session-events.ts";
export { ABORTED, SessionLock } from "./session-lock.ts";
export { SessionProcesses, type SessionProcessesOptions } from "./session-processes.ts";
export {
  type ChatRow,
  type PendingChangeRow,
  type PendingChangeWithAgent,
  type ProjectRow,
  SessionRepository,
  type SessionRow,
  type SessionWithWorktree,
  type SessionWorktreeRow,
} from "./session-repository.ts";
export {
  type CreateSessionOptions,
  type FoldCommitsResult,
  SessionService,
  type SessionServiceOptions,
  type SessionWork,
} from "./session-service.ts";
export { SessionsError, type SessionsErrorCode } from "./sessions-error.ts";
export { agentSessionJobId } from "./usage-job.ts";
