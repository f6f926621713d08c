export { type AgentTypeCatalogue, defaultAgentTypes } from "./agent-types.ts";
export { BatchSpecError, type BatchSpecErrorCode } from "./batch-spec-error.ts";
export {
  type BatchSpec,
  type BatchSpecInput,
  BatchSpecSchema,
  type ChangesetHooks,
  type ChangesetTemplate,
  type CodingAgent,
  type EnvInput,
  type HookStep,
  type HookStepInput,
  type ImportChangeset,
  type Mount,
  type OnEntry,
  type Output,
  type PublishedInput,
  type Step,
  type StepInput,
  type TransformChanges,
  type WorkspaceConfiguration,
} from "./batch-spec-schema.ts";
export {
  type CacheKeyInput,
  cacheKeyDocument,
  canonicalJson,
  computeCacheKey,
  type MountedFileMetadata,
  perJobEnvNames,
} from "./cache-key.ts";
export { canonicalSpec, canonicalStep } from "./canonical.ts";
// coding-agent exports below
export { claudeCodeAgent } from "./coding-agent/agents/claude-code.ts";
export { CODEX_PROVIDER_ID, codexAgent, codexArguments } from "./coding-agent/agents/codex.ts";
export { geminiAgent } from "./coding-agent/agents/gemini.ts";
export {
  OPENCODE_PROVIDER_ID,
  opencodeAgent,
  opencodeConfig,
} from "./coding-agent/agents/opencode.ts";
export {
  FILE_BINARIES,
  fileReleasePlan,
  NPM_BINARIES,
  npmPlan,
  STAGING_BINARIES,
  TAR_GZ_BINARIES,
  tarGzReleasePlan,
  ZIP_BINARIES,
  zipReleasePlan,
} from "./coding-agent/install-steps.ts";
export {
  type AgentArchitecture,
  type AgentOperatingSystem,
  type AgentPlatform,
  ALL_PLATFORMS,
  type PlatformName,
  type ResolvedPlatform,
} from "./coding-agent/platform.ts";
export {
  AgentTypeRegistry,
  createDefaultAgentRegistry,
  defaultAgentRegistry,
} from "./coding-agent/registry.ts";
export {
  defaultInstallDirectory,
  type RenderCodingAgentStepInput,
  type RenderedCodingAgentStep,
  type RenderOptions,
  renderCodingAgentStep,
} from "./coding-agent/render.ts";
export { type ShellValuePart, shellQuote, shellValue } from "./coding-agent/shell-quote.ts";
export type {
  AgentEnvironmentAssignment,
  AgentInstallContext,
  AgentInstallPlan,
  AgentRunContext,
  AgentRunPlan,
  AgentTypeDefinition,
  CodingAgentResult,
  InstallSource,
} from "./coding-agent/types.ts";
export {
  type BatchSpecDiagnostic,
  type BatchSpecDiagnosticCode,
  type FieldPath,
  formatDiagnostic,
  formatFieldPath,
} from "./diagnostics.ts";
export { compileGlob, matchesGlob } from "./glob.ts";
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
export { passedThroughEnvNames, resolveStepEnv } from "./step-env.ts";
export { closestMatch, editDistance } from "./suggest.ts";
export { checkTemplate, type TemplateProblem } from "./template/template-check.ts";
export {
  batchChangeLinkPlaceholder,
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
export { templateFunctionNames } from "./template/template-functions.ts";
export {
  containsTemplate,
  type ParsedTemplate,
  parseTemplate,
} from "./template/template-syntax.ts";
export type { TemplateValue } from "./template/template-values.ts";
export { type DryRunOptions, dryRunTemplates } from "./template-dry-run.ts";
