// The package's base error.

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
  quoteShellWord,
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
  capOutput,
  MODEL_OUTPUT_MAX_BYTES,
  type OutputTruncation,
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
