import { parseServerArguments, serverUsage } from "./arguments.ts";
import { resolveServerConfig } from "./config.ts";
import { ServerError } from "./server-error.ts";
import { type RunningServer, startServer } from "./start-server.ts";

/**
 * `deckhand up`: start, then on SIGTERM or SIGINT shut down in `RunningServer.close`'s order
 * (the task worker first, so running turns finish or go back to the queue while the model proxy
 * still serves them; then the agents' processes, HTTP, the workspace agent and the database)
 * and exit 0. Configuration and start-up errors return exit code 2 with one line on stderr
 * instead of a stack trace.
 */
export async function runServerUntilSignalled(argv: string[]): Promise<number> {
  // Listen for the signals before anything starts: a SIGTERM during start-up, or right after the
  // "listening" line, would otherwise take Node's default action and kill the process without a
  // shutdown, leaving the data directory's lock and the agents' processes behind.
  let signalled = false;
  const remember = () => {
    signalled = true;
  };
  process.on("SIGTERM", remember);
  process.on("SIGINT", remember);
  let started: RunningServer;
  try {
    const { help, ...flags } = parseServerArguments(argv);
    if (help) {
      process.stdout.write(serverUsage);
      return 0;
    }
    started = await startServer(resolveServerConfig(flags));
  } catch (error) {
    process.off("SIGTERM", remember);
    process.off("SIGINT", remember);
    if (error instanceof ServerError) {
      process.stderr.write(`deckhand up: ${error.message}\n`);
      return 2;
    }
    throw error;
  }
  const server = started;
  return new Promise<number>((resolveExit) => {
    const stop = () => {
      process.off("SIGTERM", stop);
      process.off("SIGINT", stop);
      server.close().then(
        () => resolveExit(0),
        (error: unknown) => {
          process.stderr.write(`deckhand up: shutdown failed: ${String(error)}\n`);
          resolveExit(1);
        },
      );
    };
    process.on("SIGTERM", stop);
    process.on("SIGINT", stop);
    process.off("SIGTERM", remember);
    process.off("SIGINT", remember);
    if (signalled) stop();
  });
}
