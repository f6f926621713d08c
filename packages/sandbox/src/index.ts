export {
  type DetectSandboxOptions,
  detectSandbox,
  type SandboxCapability,
} from "./detect-sandbox.ts";
export { HOME_CREDENTIAL_PATHS, MACHINE_HIDDEN_PATHS } from "./hidden-paths.ts";
export { HostAllowList } from "./host-allow-list.ts";
export {
  type LaunchProfile,
  type LaunchRequest,
  type LaunchWarning,
  type NetworkAccess,
  ProcessLauncher,
  type ProcessLauncherOptions,
} from "./process-launcher.ts";
export { remoteModelProxy, remoteModelProxyHosts } from "./remote-model-proxy.ts";
export type { ModelProxyEndpoint } from "./sandbox-endpoints.ts";
export { SandboxError, type SandboxErrorCode } from "./sandbox-error.ts";
export {
  DEFAULT_SANDBOX_SETTINGS,
  HostPatternSchema,
  type SandboxMode,
  SandboxModeSchema,
  type SandboxSettings,
  type SandboxSettingsFile,
  SandboxSettingsFileSchema,
  type StepNetwork,
  sandboxSettings,
} from "./sandbox-settings.ts";
