export {
  AGENT_TURN_TASK,
  type AgentTurnPayload,
  createSessionDomain,
  publishSessionEvent,
  type SessionDomain,
  type SessionDomainOptions,
  SessionStreamHub,
} from "@deckhand/sessions";
export {
  API_TOKEN_PREFIX,
  ApiTokenStore,
  GENERATED_ADMIN_TOKEN_NAME,
} from "./api-tokens.ts";
export { parseServerArguments, serverUsage } from "./arguments.ts";
export {
  ADMIN_TOKEN_ENV,
  CONFIG_FILE_NAME,
  DATABASE_URL_ENV,
  type ResolveServerConfigOptions,
  resolveServerConfig,
  SERVER_DEFAULT_LISTEN,
  type ServerConfig,
  type ServerConfigFile,
  ServerConfigFileSchema,
  type ServerFlags,
  ServerFlagsSchema,
  type ServerLogLevel,
} from "./config.ts";
export { createServerApp, type ServerAppOptions } from "./create-server-app.ts";
export { DbUsageRecorder, type ModelUsageRow } from "./db-stores.ts";
export { runServerUntilSignalled } from "./run.ts";
export { ServerError, type ServerErrorCode } from "./server-error.ts";
export { type RunningServer, type StartServerOptions, startServer } from "./start-server.ts";
