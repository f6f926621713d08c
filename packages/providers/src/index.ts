export {
  type AuthChoice,
  type AuthChoiceInput,
  authMethodVariables,
  chooseAuthMethod,
} from "./acp-auth.ts";
export {
  type ProbeRecord,
  type ProbeResult,
  ProbeResultSchema,
  type ProbeStore,
  parseStoredResult,
} from "./probe-store.ts";
export {
  createProviderService,
  type ListedProvider,
  type LogFields,
  type ModelProxyLease,
  type PatchConfigOptions,
  type ProbeModelProxy,
  type ProviderService,
  type ProviderServiceOptions,
  type ProvidersLogger,
  type RefreshOptions,
  type ResolvedProvider,
  type ResolveOptions,
  type SnapshotOptions,
} from "./provider-service.ts";
export { ProvidersError, type ProvidersErrorCode } from "./providers-error.ts";
export { createProvidersRouter } from "./providers-router.ts";
export type { ModelProxyContext } from "./registry.ts";
export {
  type AgentStartTimeoutSettings,
  type AgentStartTimeouts,
  DEFAULT_AGENT_START_TIMEOUTS,
} from "./start-timeouts.ts";
export {
  type AgentStartTimeoutsFile,
  AgentStartTimeoutsFileSchema,
  agentStartTimeoutsFrom,
} from "./start-timeouts-file.ts";
