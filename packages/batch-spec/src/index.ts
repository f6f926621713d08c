export type { AcpProviderCatalogue, AgentTypeCatalogue } from "./agent-types.ts";
export { BatchSpecError, type BatchSpecErrorCode } from "./batch-spec-error.ts";
export {
  ACP_AGENT_TYPE,
  type BatchSpec,
  type BatchSpecInput,
  BatchSpecSchema,
  type EnvInput,
  type HookStep,
  type HookStepInput,
  type Mount,
  type PublishedInput,
  type Step,
  type StepInput,
  type TransformChanges,
  type WorkspaceConfiguration,
} from "./batch-spec-schema.ts";
export {
  type CacheKeyInput,
  computeCacheKey,
  type MountedFileMetadata,
  type StepRuntimeKey,
} from "./cache-key.ts";
export type {
  AgentArchitecture,
  AgentOperatingSystem,
  AgentPlatform,
  PlatformName,
  ResolvedPlatform,
} from "./coding-agent/platform.ts";
export { AgentTypeRegistry, defaultAgentRegistry } from "./coding-agent/registry.ts";
export {
  type RenderCodingAgentStepInput,
  type RenderedCodingAgentStep,
  type RenderOptions,
  renderCodingAgentStep,
} from "./coding-agent/render.ts";
export type { ShellValuePart } from "./coding-agent/shell-quote.ts";
export {
  AGENT_STATE_DIRECTORY,
  type AgentDownloadContext,
  type AgentEnvironmentAssignment,
  type AgentInstallContext,
  type AgentInstallPlan,
  type AgentRunContext,
  type AgentRunPlan,
  type AgentStateFile,
  type AgentTypeDefinition,
  type CodingAgentResult,
  type DownloadSource,
  type InstallSource,
} from "./coding-agent/types.ts";
export {
  type BatchSpecDiagnostic,
  type BatchSpecDiagnosticCode,
  formatDiagnostic,
} from "./diagnostics.ts";
export { compileGlob } from "./glob.ts";
export { batchSpecJsonSchema, renderBatchSpecJsonSchema } from "./json-schema.ts";
export { type ValidateMountsOptions, validateMounts } from "./mounts.ts";
export {
  type BatchSpecFormat,
  type ParseBatchSpecOptions,
  type ParseBatchSpecResult,
  parseBatchSpec,
} from "./parse-batch-spec.ts";
export { type PublishedState, resolvePublished } from "./published.ts";
export { evaluateStaticCondition, type StaticConditionInput } from "./static-condition.ts";
export { resolveStepEnv } from "./step-env.ts";
export { editDistance } from "./suggest.ts";
export {
  type ChangesetTemplateContextInput,
  createChangesetTemplateContext,
  createStepTemplateContext,
  type StepTemplateContextInput,
  type TemplateBatchChange,
  type TemplateChangedFiles,
  type TemplateRepository,
  type TemplateStepResult,
} from "./template/template-context.ts";
export { renderTemplate, type TemplateContext } from "./template/template-evaluate.ts";
export type { ParsedTemplate } from "./template/template-syntax.ts";
export type { TemplateValue } from "./template/template-values.ts";
export { type DryRunOptions, dryRunTemplates } from "./template-dry-run.ts";
