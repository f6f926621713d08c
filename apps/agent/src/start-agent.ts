import { listen } from "@deckhand/http-kit";
import { ProcessManager } from "@deckhand/process-manager";
import { WorkspaceFiles } from "@deckhand/workspace-files";
import pino, { type Logger } from "pino";
import { AgentError } from "./agent-error.ts";
import type { AgentConfig } from "./config.ts";
import { createAgentApp } from "./create-agent-app.ts";

export interface RunningAgent {
  /** `http://host:port`, with the port actually bound (useful with port 0). */
  url: string;
  port: number;
  processes: ProcessManager;
  /** Stops accepting, stops every process group the agent started, closes connections. */
  close(): Promise<void>;
}

export interface StartAgentOptions {
  /** Where JSON log lines go; standard output by default. */
  logDestination?: NodeJS.WritableStream;
  logger?: Logger;
}

export async function startAgent(
  config: AgentConfig,
  options: StartAgentOptions = {},
): Promise<RunningAgent> {
  const logger =
    options.logger ??
    pino(
      { level: config.logLevel, base: { service: "deckhand-agent" } },
      options.logDestination ?? process.stdout,
    );
  const processes = new ProcessManager({
    defaultWorkdir: config.root,
    maxRunning: config.maxRunningProcesses,
    terminateGraceMs: config.terminateGraceMs,
    onWarning: (message, details) => logger.warn({ details }, message),
  });
  const files = new WorkspaceFiles({ root: config.root });
  const app = createAgentApp({ root: config.root, token: config.token, processes, files, logger });

  const { server, port, url } = await listen(
    app.fetch,
    config,
    (error) =>
      new AgentError(
        "listen_failed",
        `cannot listen on ${config.host}:${config.port}: ${error.message}; choose another --listen address`,
        { cause: error },
      ),
  );
  logger.info({ url, root: config.root, auth: config.token !== null }, "workspace agent listening");

  let closing: Promise<void> | null = null;
  const close = () => {
    closing ??= (async () => {
      logger.info("shutting down: no new requests, stopping process groups");
      const stopped = new Promise<void>((resolveClose) => server.close(() => resolveClose()));
      await processes.shutdown({ graceMs: config.shutdownGraceMs });
      // Waiting output reads hold connections open; they have their answer now.
      if ("closeAllConnections" in server) server.closeAllConnections();
      await stopped;
      logger.info("stopped");
      logger.flush?.();
    })();
    return closing;
  };
  return { url, port, processes, close };
}
