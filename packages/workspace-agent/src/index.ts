export { AgentError, type AgentErrorCode } from "./agent-error.ts";
export {
  type AgentConfig,
  type AgentConfigInput,
  AgentConfigInputSchema,
  parseListenAddress,
  resolveAgentConfig,
} from "./config.ts";
export { type AgentAppOptions, agentOriginPolicy, createAgentApp } from "./create-agent-app.ts";
export {
  GitWatchClientError,
  type WatchGitOptions,
  watchGit,
} from "./git-watch-client.ts";
export { GitWatchSocket, type GitWatchSocketOptions } from "./git-watch-socket.ts";
export { type RunningAgent, type StartAgentOptions, startAgent } from "./start-agent.ts";
