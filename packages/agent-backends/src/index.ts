// ACP backend: an agent process speaking the Agent Client Protocol over stdio.
export type { AcpTimeouts } from "./acp/acp-agent-connection.ts";
export { type AcpBackendOptions, createAcpBackend } from "./acp/acp-backend.ts";
export type { AcpBackendLogger, AcpLogFields } from "./acp/acp-redaction.ts";
export type { AcpLoginChoice } from "./acp/acp-session-opener.ts";
export { type AcpLaunch, agentEnvironment } from "./acp/agent-process.ts";
export type {
  AgentBackend,
  AgentSessionContext,
  BackendHealth,
  EnsureSessionResult,
  PermissionAnswer,
  PromptInput,
  PromptResult,
} from "./backend.ts";
export {
  AGENT_BACKEND_ERROR_CODES,
  AgentBackendError,
  type AgentBackendErrorCode,
} from "./errors.ts";
export {
  createNativeBackend,
  type NativeAgentLogger,
  type NativeBackend,
  type NativeBackendOptions,
} from "./native/agent/native-agent.ts";
export {
  FileSessionRecorder,
  type RecordEntry,
  RecordEntrySchema,
  type SessionRecorder,
} from "./native/agent/recorder.ts";
export { type ReplayOptions, replaySubmissions } from "./native/agent/replay.ts";
export { type Submission, SubmissionSchema } from "./native/agent/submission.ts";
export type { ModelClientErrorKind } from "./native/model/model-client-error.ts";
export {
  collectModelTurn,
  type ModelRetryEvent,
  type ModelTurnEvent,
  type ModelTurnOptions,
  type ModelTurnResult,
  type RetryPolicy,
} from "./native/model/model-turn.ts";
export type {
  ModelStreamEvent,
  ModelUsage,
  ResponseItem,
} from "./native/model/responses-events.ts";
export type { ResponsesTool, StreamResponseOptions } from "./native/model/stream-response.ts";
export type { ApprovalPolicy } from "./native/safety/command-safety.ts";
export { invokeTool, type ToolOutcome } from "./native/tools/registry.ts";
export type { NativeTool, ToolContext } from "./native/tools/tool-context.ts";
// "Always" permission answers, shared by both kinds of backend.
export {
  type AcpToolKind,
  type PermissionMemory,
  type PermissionMemoryKey,
  type RememberedPermission,
  storedToolKind,
} from "./permission-memory.ts";
export {
  AgentPool,
  type AgentPoolDisposal,
  type AgentPoolEntryHealth,
  type AgentPoolKey,
  type AgentPoolOptions,
} from "./pool/agent-pool.ts";
