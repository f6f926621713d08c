import { isVersionCommand, versionLine } from "./version-command.ts";

export const usage = `Usage: deckhand <command> [options]

Commands:
  up         start the Deckhand server (embedded database, model-provider proxy, local agent)
  agent      serve the workspace agent (process and file APIs) for a directory
  batch      run a batch spec (preview, apply), validate it, list its workspaces, render a step
  executor   run batch workspace jobs from a server on this machine
  executor-tokens  create, list or revoke the tokens executors reach a server with
  providers  list, refresh, enable, disable or add agent providers on a running server
  health     check a server, agent or executor on this machine (for container health checks)
  version    print the version
  help       show this help

Run "deckhand <command> --help" for a command's options.
`;

/**
 * Runs one CLI invocation and returns its exit code; never throws for bad input.
 *
 * Each command's module is imported only when that command runs: the server and the agent pull
 * in the database, PGlite and the HTTP stack, which `version`, `help` and `batch` never need and
 * which would otherwise dominate their start-up time.
 */
export async function runCli(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (isVersionCommand(command)) {
    process.stdout.write(versionLine);
    return 0;
  }
  switch (command) {
    case "agent": {
      const { runAgentUntilSignalled } = await import("@deckhand/agent-app");
      return runAgentUntilSignalled(rest);
    }
    case "up": {
      const { runUpCommand } = await import("./up-command.ts");
      return runUpCommand(rest);
    }
    case "batch": {
      const { runBatchCommand } = await import("./batch-command.ts");
      return runBatchCommand(rest);
    }
    case "executor": {
      const { runExecutorCommand } = await import("./executor-command.ts");
      return runExecutorCommand(rest);
    }
    case "executor-tokens": {
      const { runExecutorTokensCommand } = await import("./executor-tokens-command.ts");
      return runExecutorTokensCommand(rest);
    }
    case "providers": {
      const { runProvidersCommand } = await import("./providers-command.ts");
      return runProvidersCommand(rest);
    }
    case "health": {
      const { runHealthCommand } = await import("./health-command.ts");
      return runHealthCommand(rest);
    }
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
