import { runAgentUntilSignalled } from "@deckhand/agent-app";
import packageJson from "../package.json" with { type: "json" };
import { runBatchCommand } from "./batch-command.ts";
import { runProvidersCommand } from "./providers-command.ts";
import { runUpCommand } from "./up-command.ts";

export const usage = `Usage: deckhand <command> [options]

Commands:
  up         start the Deckhand server (embedded database, model-provider proxy, local agent)
  agent      serve the workspace agent (process and file APIs) for a directory
  batch      validate a batch spec, render a codingAgent step, print the JSON Schema
  providers  list, refresh, enable, disable or add agent providers on a running server
  version    print the version
  help       show this help

Run "deckhand <command> --help" for a command's options.
`;

/** Runs one CLI invocation and returns its exit code; never throws for bad input. */
export async function runCli(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case "agent":
      return runAgentUntilSignalled(rest);
    case "up":
      return runUpCommand(rest);
    case "batch":
      return runBatchCommand(rest);
    case "providers":
      return runProvidersCommand(rest);
    case "version":
    case "--version":
      process.stdout.write(`${packageJson.version}\n`);
      return 0;
    case undefined:
    case "help":
    case "--help":
    case "-h":
      process.stdout.write(usage);
      return 0;
    default:
      process.stderr.write(`deckhand: unknown command "${command}"\n\n${usage}`);
      return 2;
  }
}
