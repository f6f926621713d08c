// The package's base error.

/** Kept for callers of this package; the quoter itself is `@deckhand/shell`'s. */
export { quoteShellWord } from "@deckhand/shell";
// ACP backend: an agent process speaking the Agent Client Protocol over stdio.
export {
  type AcpBackendLogger,
  type AcpBackendOptions,
  type AcpLogFields,
  type AcpTimeouts,
  createAcpBackend,
  DEFAULT_ACP_TIMEOUTS,
} from "./acp/acp-backend.ts";
export { eventsFromUpdate, stopReasonFrom, usageFromResponse } from "./acp/acp-events.ts";
export { keepTail, terminalCommandLine } from "./acp/acp-terminals.ts";
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
  PatchParseError,
} from "./errors.ts";
// Native agent: the turn loop (submission queue, event stream), its recording and replay.
export { DEFAULT_NATIVE_INSTRUCTIONS } from "./native/agent/instructions.ts";
export {
  createNativeBackend,
  NativeAgent,
  type NativeAgentLogger,
  type NativeBackend,
  type NativeBackendOptions,
} from "./native/agent/native-agent.ts";
export {
  FileSessionRecorder,
  MemorySessionRecorder,
  parseRecording,
  type RecordEntry,
  RecordEntrySchema,
  type SessionRecorder,
} from "./native/agent/recorder.ts";
export { type ReplayOptions, replaySubmissions } from "./native/agent/replay.ts";
export {
  type ApprovalScope,
  approvalScope,
  permissionMemoryKey,
} from "./native/agent/session-approvals.ts";
export { type Submission, SubmissionSchema } from "./native/agent/submission.ts";
export {
  looseArguments,
  type ToolKind,
  toolKind,
  toolLocations,
  toolTitle,
} from "./native/agent/tool-presentation.ts";
// Native agent: apply_patch, command safety and the tools the model calls.
export {
  type ApplyPatchOptions,
  type ApplyPatchResult,
  applyPatch,
  type PatchFileChange,
  type PatchFileReader,
  type PatchFileState,
  type PatchPlan,
  planPatch,
} from "./native/apply-patch/apply-patch.ts";
export { applyChunks } from "./native/apply-patch/compute-update.ts";
export {
  PatchMarker,
  type PatchOperation,
  parsePatch,
  patchPaths,
  type UpdateChunk,
} from "./native/apply-patch/parse-patch.ts";
export { patchFromCommand } from "./native/apply-patch/patch-command.ts";
export { seekSequence } from "./native/apply-patch/seek-sequence.ts";
export {
  ModelClientError,
  type ModelClientErrorDetails,
  type ModelClientErrorKind,
} from "./native/model/model-client-error.ts";
export {
  backoffDelay,
  collectModelTurn,
  DEFAULT_RETRY_POLICY,
  type ModelRetryEvent,
  type ModelTurnEvent,
  type ModelTurnOptions,
  type ModelTurnResult,
  type RetryPolicy,
  runModelTurnWithRetry,
} from "./native/model/model-turn.ts";
export {
  type ModelStreamEvent,
  type ModelUsage,
  parseResponsesEvent,
  type ResponseItem,
  retryAfterFromMessage,
} from "./native/model/responses-events.ts";
export {
  type ResponsesTool,
  retryAfterFromHeaders,
  type StreamResponseOptions,
  streamResponse,
} from "./native/model/stream-response.ts";
export {
  type ApprovalPolicy,
  ApprovalPolicySchema,
  type AssessCommandOptions,
  assessCommand,
  assessPatch,
  type CommandSafety,
  knownSafeCommand,
  type SafetyAssessment,
  type SafetyDecision,
} from "./native/safety/command-safety.ts";
export {
  parseShellScript,
  type RedirectionOperator,
  type ShellOperator,
  type ShellScript,
  type ShellToken,
  type ShellTokens,
  type ShellWord,
  type SimpleCommand,
  tokenizeShell,
  withoutTrailingBackground,
} from "./native/safety/shell-words.ts";
export {
  isInsideWorktree,
  resolveWorktreePath,
  type WorktreePathOptions,
} from "./native/safety/worktree-path.ts";
export { APPLY_PATCH_DESCRIPTION, applyPatchTool } from "./native/tools/apply-patch-tool.ts";
export { defineTool } from "./native/tools/define-tool.ts";
export {
  EXECUTE_DEFAULT_TIMEOUT_MS,
  EXECUTE_MAX_TIMEOUT_MS,
  type ExecuteArgs,
  ExecuteArgsSchema,
  type ExecuteResult,
  executeCommand,
  executeTool,
  fileDumpNote,
  NON_INTERACTIVE_ENV,
} from "./native/tools/execute-tool.ts";
export {
  editFileTool,
  type ReadFileResult,
  readFileTool,
  writeFileTool,
} from "./native/tools/file-tools.ts";
export {
  capForJson,
  capOutput,
  MODEL_OUTPUT_MAX_BYTES,
  type OutputTruncation,
  toolResultText,
} from "./native/tools/model-output.ts";
export {
  PROCESS_OUTPUT_DEFAULT_WAIT_MS,
  type ProcessListResult,
  type ProcessOutputResult,
  processListTool,
  processOutputTool,
  processSignalTool,
} from "./native/tools/process-tools.ts";
export {
  assessToolCall,
  findNativeTool,
  invokeTool,
  type NativeToolName,
  nativeTools,
  type ResponsesFunctionTool,
  responsesTools,
  type ToolOutcome,
} from "./native/tools/registry.ts";
export type { NativeTool, ToolContext } from "./native/tools/tool-context.ts";
// "Always" permission answers, shared by both kinds of backend.
export {
  type AcpToolKind,
  createInMemoryPermissionMemory,
  type PermissionMemory,
  type PermissionMemoryKey,
  type RememberedPermission,
  storedToolKind,
} from "./permission-memory.ts";
export {
  AgentPool,
  type AgentPoolEntryHealth,
  type AgentPoolKey,
  type AgentPoolOptions,
} from "./pool/agent-pool.ts";
