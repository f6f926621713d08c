export type { ChatScope } from "./chat-scope.ts";
export {
  type ClientWaitOptions,
  type OutputRequestOptions,
  ProcessClient,
  ProcessClientError,
  type ProcessClientOptions,
  type StartAndWaitResponse,
  type StartRequestOptions,
} from "./process-client.ts";
export {
  type Environment,
  type ListProcessesOptions,
  type OutputOptions,
  ProcessManager,
  type ProcessManagerOptions,
  type ShutdownOptions,
  type StartAndWaitResult,
  type StartProcessOptions,
  type WaitForOutputOptions,
  type WaitOptions,
  type WaitOutcome,
} from "./process-manager.ts";
export { ProcessManagerError } from "./process-manager-error.ts";
export { createProcessRouter, type ProcessRouterOptions } from "./process-router.ts";
