export {
  type AuthChoice,
  type AuthChoiceInput,
  chooseAuthMethod,
} from "./acp-auth.ts";
export {
  type ProbeRecord,
  type ProbeResult,
  ProbeResultSchema,
  type ProbeStore,
  parseStoredResult,
} from "./probe-store.ts";
export type { ModelProxyLease, ProbeModelProxy } from "./provider-probes.ts";
export type { ResolvedProvider, ResolveOptions } from "./provider-resolution.ts";
export {
  createProviderService,
  type ListedProvider,
  type ProviderService,
  type ProviderServiceOptions,
  type RefreshOptions,
  type SnapshotOptions,
} from "./provider-service.ts";
export type { PatchConfigOptions } from "./providers-config-store.ts";
export { ProvidersError, type ProvidersErrorCode } from "./providers-error.ts";
export type { LogFields, ProvidersLogger } from "./providers-logger.ts";
export { createProvidersRouter } from "./providers-router.ts";
export type { ModelProxyContext } from "./registry.ts";
export type {
  AgentStartTimeoutSettings,
  AgentStartTimeouts,
} from "./start-timeouts.ts";
export {
  type AgentStartTimeoutsFile,
  AgentStartTimeoutsFileSchema,
  agentStartTimeoutsFrom,
} from "./start-timeouts-file.ts";
