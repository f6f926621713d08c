import { type FlagTable, parseFlags } from "@deckhand/command-line";
import { AGENT_DEFAULT_LISTEN, WireEnv } from "@deckhand/wire";
import { type AgentConfigInput, AgentError } from "@deckhand/workspace-agent";

export const agentUsage = `Usage: deckhand agent [options]

Serves the workspace agent's process and file APIs for one directory.

Options:
  --listen HOST:PORT     address to listen on (default ${AGENT_DEFAULT_LISTEN})
  --dir PATH             workspace root (default: current directory)
  --token TOKEN          bearer token clients must send (default: $${WireEnv.agentToken});
                         required when listening on a non-loopback address
  --allowed-hosts LIST   more names clients reach the agent by, comma-separated
                         (.example.com: a domain and every name under it); loopback
                         names and the listen address always work
                         (default: $${WireEnv.agentAllowedHosts})
  --max-processes N      running processes allowed at once (default 64)
  --log-level LEVEL      fatal|error|warn|info|debug|silent (default info)
  -h, --help             show this help
`;

/** Each flag and the configuration setting it sets; `resolveAgentConfig` checks the values. */
const AGENT_FLAGS = {
  listen: { type: "string", setting: "listen" },
  dir: { type: "string", setting: "dir" },
  token: { type: "string", setting: "token" },
  "allowed-hosts": { type: "string", setting: "allowedHosts" },
  "max-processes": { type: "string", setting: "maxRunningProcesses" },
  "log-level": { type: "string", setting: "logLevel" },
} as const satisfies FlagTable<keyof AgentConfigInput>;

/** Turns argv into configuration input; unknown flags are an AgentError naming them. */
export function parseAgentArguments(argv: string[]): AgentConfigInput & { help: boolean } {
  const { settings, help } = parseFlags(argv, AGENT_FLAGS, {
    usage: agentUsage,
    invalid: (message, cause) => new AgentError("invalid_config", message, { cause }),
  });
  return { ...(settings as AgentConfigInput), help };
}
