export type { AgentCatalog, AgentChoice } from "./agent-choice.ts";
export type { ChatService } from "./chats/chat-service.ts";
export type { MessageService } from "./chats/message-service.ts";
export type { ChangedPath, GitEnvironment } from "./git.ts";
export type {
  PendingChangeService,
  RecordedWork,
} from "./pending-changes/pending-change-service.ts";
export type { ProjectService, ProjectServiceOptions } from "./projects/project-service.ts";
export {
  createSessionDomain,
  type SessionDomain,
  type SessionDomainOptions,
} from "./session-domain.ts";
export type { ABORTED, SessionLock } from "./session-lock.ts";
export type { AgentSessionService } from "./sessions/agent-session-service.ts";
export {
  SessionActivityHub,
  type SessionActivityHubOptions,
} from "./sessions/session-activity-hub.ts";
export { SessionProcesses, type SessionProcessesOptions } from "./sessions/session-processes.ts";
export type {
  CreateSessionOptions,
  SessionService,
  SessionServiceOptions,
  SessionWork,
} from "./sessions/session-service.ts";
export { SessionsError, type SessionsErrorCode } from "./sessions-error.ts";
export {
  AGENT_TURN_TASK,
  type AgentTurnPayload,
  AgentTurnPayloadSchema,
} from "./store/agent-turn-tasks.ts";
export { DbPermissionMemory } from "./store/permission-memory.ts";
export { publishSessionEvent, SessionStreamHub } from "./store/session-events.ts";
export type { SessionWorktreeRow } from "./store/session-rows.ts";
export {
  type AgentBackendFactoryOptions,
  agentBackendFactory,
  DEFAULT_NATIVE_MODEL,
} from "./turns/agent-backend-factory.ts";
export { AgentTurns, type AgentTurnsOptions } from "./turns/agent-turns.ts";
export type { ModelAccess, ModelAccessLease } from "./turns/model-access.ts";
export {
  type AgentStart,
  type BackendFactory,
  type BackendRequest,
  NATIVE_AGENT_TYPE,
} from "./turns/session-agents.ts";
export { assistantMessageId, INTERRUPTED_ERROR } from "./turns/turn-messages.ts";
export type { AgentSessionUsageJob } from "./usage-job.ts";
