export {
  type AgentEnvironmentPolicy,
  type AgentEnvironmentPolicyInput,
  agentEnvironment,
  agentEnvironmentPolicy,
  DECKHAND_SECRET_ENVIRONMENT,
  DEFAULT_AGENT_ENVIRONMENT_DENY,
} from "./agent-environment.ts";
export { redactBytes } from "./redact-bytes.ts";
export {
  describeError,
  looksLikeSecretName,
  REDACTED,
  type RedactNamedOptions,
  redactArgs,
  redactEnv,
  redactSecrets,
  redactValue,
  rememberSecrets,
} from "./redaction.ts";
