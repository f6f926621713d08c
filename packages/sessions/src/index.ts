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
export { ABORTED, SessionLock } from "./session-lock.ts";
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
export {
  SessionActivityHub,
  type SessionActivityHubOptions,
} from "./sessions/session-activity-hub.ts";
export { SessionProcesses, type SessionProcessesOptions } from "./sessions/session-processes.ts";
export { SessionsError, type SessionsErrorCode } from "./sessions-error.ts";
export { DbPermissionMemory } from "./store/permission-memory.ts";
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
} from "./store/session-events.ts";
export { type SessionState, sessionStates } from "./store/session-states.ts";
export {
  type AgentBackendFactoryOptions,
  agentBackendFactory,
  DEFAULT_NATIVE_MODEL,
} from "./turns/agent-backend-factory.ts";
export type { ModelAccess, ModelAccessLease } from "./turns/model-access.ts";
export { type AgentSessionUsageJob, agentSessionJobId } from "./usage-job.ts";
