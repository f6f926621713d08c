import { AgentError, resolveAgentConfig, startAgent } from "@deckhand/workspace-agent";
import { agentUsage, parseAgentArguments } from "./arguments.ts";

/**
 * `deckhand agent`: start, then on SIGTERM or SIGINT stop accepting, stop every process group,
 * and exit 0. Returns the exit code for configuration errors instead of throwing a stack trace.
 */
export async function runAgentUntilSignalled(argv: string[]): Promise<number> {
  let started: Awaited<ReturnType<typeof startAgent>>;
  try {
    const { help, ...input } = parseAgentArguments(argv);
    if (help) {
      process.stdout.write(agentUsage);
      return 0;
    }
    started = await startAgent(resolveAgentConfig(input));
  } catch (error) {
    if (error instanceof AgentError) {
      process.stderr.write(`deckhand agent: ${error.message}\n`);
      return 2;
    }
    throw error;
  }
  const agent = started;
  return new Promise<number>((resolveExit) => {
    const stop = () => {
      process.off("SIGTERM", stop);
      process.off("SIGINT", stop);
      agent.close().then(
        () => resolveExit(0),
        (error: unknown) => {
          process.stderr.write(`deckhand agent: shutdown failed: ${String(error)}\n`);
          resolveExit(1);
        },
      );
    };
    process.on("SIGTERM", stop);
    process.on("SIGINT", stop);
  });
}
