export {
  commandKind,
  type ProbeOptions,
  type ProbeOutcome,
  probeAcpAgent,
  type VersionOutput,
  versionOutput,
} from "./acp-probe.ts";
export {
  type ConfigSnapshot,
  type ConfiguredProvider,
  configEtag,
  type InterpretedConfig,
  interpretProvidersConfig,
  jsonPath,
  readProvidersConfig,
  writeFileAtomically,
} from "./config-file.ts";
export { applyMergePatch, type JsonValue } from "./merge-patch.ts";
export {
  MemoryProbeStore,
  type ProbeRecord,
  type ProbeResult,
  ProbeResultSchema,
  type ProbeStore,
  parseStoredResult,
} from "./probe-store.ts";
export {
  createProviderService,
  DEFAULT_COMMANDS_WAIT_MS,
  DEFAULT_PROBE_TIMEOUT_MS,
  DEFAULT_PROBE_TTL_MS,
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
export { createProvidersRouter, providersErrorStatus } from "./providers-router.ts";
export {
  BUILTIN_PROVIDERS,
  builtinProvider,
  type ModelProxyContext,
  type ModelProxyLaunch,
  type ModelProxySupport,
  type ProviderDefinition,
} from "./registry.ts";
export { type ResolveExecutableOptions, resolveExecutable } from "./resolve-executable.ts";
