export {
  type AgentEnvironmentPolicy,
  type AgentEnvironmentPolicyInput,
  agentEnvironment,
  agentEnvironmentPolicy,
  DECKHAND_SECRET_ENVIRONMENT,
  DEFAULT_AGENT_ENVIRONMENT_DENY,
  matchesEnvironmentPattern,
  withheldBecause,
} from "./agent-environment.ts";
export {
  describeError,
  looksLikeSecretName,
  MIN_SECRET_LENGTH,
  REDACTED,
  type RedactNamedOptions,
  redactArgs,
  redactEnv,
  redactSecrets,
  redactValue,
  rememberSecrets,
} from "./redaction.ts";
