import { parseArgs } from "node:util";
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

/** Turns argv into configuration input; unknown flags are an AgentError naming them. */
export function parseAgentArguments(argv: string[]): AgentConfigInput & { help: boolean } {
  try {
    const { values } = parseArgs({
      args: argv,
      strict: true,
      allowPositionals: false,
      options: {
        listen: { type: "string" },
        dir: { type: "string" },
        token: { type: "string" },
        "allowed-hosts": { type: "string" },
        "max-processes": { type: "string" },
        "log-level": { type: "string" },
        help: { type: "boolean", short: "h" },
      },
    });
    const input: Record<string, unknown> = {};
    if (values.listen !== undefined) input.listen = values.listen;
    if (values.dir !== undefined) input.dir = values.dir;
    if (values.token !== undefined) input.token = values.token;
    if (values["allowed-hosts"] !== undefined) input.allowedHosts = values["allowed-hosts"];
    if (values["max-processes"] !== undefined) input.maxRunningProcesses = values["max-processes"];
    if (values["log-level"] !== undefined) input.logLevel = values["log-level"];
    return { ...(input as AgentConfigInput), help: values.help ?? false };
  } catch (error) {
    throw new AgentError("invalid_config", `${(error as Error).message}\n\n${agentUsage}`, {
      cause: error,
    });
  }
}
