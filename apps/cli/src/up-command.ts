import { runServerUntilSignalled } from "@deckhand/server-app";

/**
 * `deckhand up [--listen HOST:PORT] [--data-dir DIR] [--database-url URL] [--no-agent]`: runs
 * the server until SIGTERM or SIGINT. Flags are parsed and validated by the server's own
 * configuration module, so `deckhand up` and the standalone server bundle accept the same ones.
 */
export async function runUpCommand(argv: string[]): Promise<number> {
  return runServerUntilSignalled(argv);
}
