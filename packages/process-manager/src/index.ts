export { type ChatScope, chatScope } from "./chat-scope.ts";
export {
  type ClientWaitOptions,
  type OutputRequestOptions,
  ProcessClient,
  ProcessClientError,
  type ProcessClientOptions,
} from "./process-client.ts";
export {
  type Environment,
  type ListProcessesOptions,
  type OutputOptions,
  ProcessManager,
  type ProcessManagerOptions,
  type ShutdownOptions,
  type StartProcessOptions,
  type WaitForOutputOptions,
  type WaitOptions,
  type WaitOutcome,
} from "./process-manager.ts";
export { ProcessManagerError } from "./process-manager-error.ts";
export { createProcessRouter, type ProcessRouterOptions } from "./process-router.ts";
