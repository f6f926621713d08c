import { admitUpgrade, listen } from "@deckhand/http-kit";
import { ProcessManager } from "@deckhand/process-manager";
import type { ProcessLauncher } from "@deckhand/sandbox";
import { agentEnvironment, agentEnvironmentPolicy } from "@deckhand/secrets";
import { WorkspaceFiles } from "@deckhand/workspace-files";
import pino, { type Logger } from "pino";
import { AgentError } from "./agent-error.ts";
import type { AgentConfig } from "./config.ts";
import { agentOriginPolicy, createAgentApp } from "./create-agent-app.ts";
import { GitWatchSocket } from "./git-watch-socket.ts";
import { workspaceProcessProfile } from "./sandbox-profile.ts";

export interface RunningAgent {
  /** `http://host:port`, with the port actually bound (useful with port 0). */
  url: string;
  port: number;
  processes: ProcessManager;
  /** The git watch's WebSocket side; `clientCount` tells how many watches are open. */
  gitWatch: GitWatchSocket;
  /** Stops accepting, stops every process group the agent started, closes connections. */
  close(): Promise<void>;
}

export interface StartAgentOptions {
  /** Where JSON log lines go; standard output by default. */
  logDestination?: NodeJS.WritableStream;
  logger?: Logger;
  /**
   * The environment every process inherits (before a request's own `env`). A server passes the
   * result of its agent-environment policy; by default the default policy applied to this
   * process's environment, with the agent's own token withheld wherever it appears.
   */
  environment?: Readonly<Record<string, string>>;
  /**
   * Starts every process (commands, terminals) with the environment policy and sandbox of the
   * process that runs the agent; unconfined without one.
   */
  launcher?: ProcessLauncher;
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
    baseEnv: {
      ...(options.environment ??
        agentEnvironment(agentEnvironmentPolicy({ secretValues: [config.token] }))),
    },
    defaultWorkdir: config.root,
    ...(options.launcher ? { launcher: options.launcher } : {}),
    profile: (workdir) => workspaceProcessProfile(config.root, workdir),
    maxRunning: config.maxRunningProcesses,
    terminateGraceMs: config.terminateGraceMs,
    onWarning: (message, details) => logger.warn({ details }, message),
  });
  const files = new WorkspaceFiles({ root: config.root });
  const originPolicy = agentOriginPolicy(config);
  const app = createAgentApp({
    originPolicy,
    root: config.root,
    token: config.token,
    processes,
    files,
    logger,
    ...(config.maxRequestBodyBytes !== undefined
      ? { maxRequestBodyBytes: config.maxRequestBodyBytes }
      : {}),
  });

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
  // WebSocket upgrades bypass the hono app; the git watch checks the token itself.
  const gitWatch = new GitWatchSocket({
    files,
    token: config.token,
    logger: logger.child({ component: "git-watch" }),
  });
  server.on("upgrade", (request, socket, head) => {
    const refused = (refusal: { code: string }) =>
      logger.info(
        { path: new URL(request.url ?? "/", "http://x").pathname, code: refusal.code },
        "WebSocket upgrade refused",
      );
    if (!admitUpgrade(originPolicy, request, socket, refused)) return;
    if (!gitWatch.handleUpgrade(request, socket, head)) socket.destroy();
  });
  logger.info({ url, root: config.root, auth: config.token !== null }, "workspace agent listening");

  let closing: Promise<void> | null = null;
  const close = () => {
    closing ??= (async () => {
      logger.info("shutting down: no new requests, stopping process groups");
      const stopped = new Promise<void>((resolveClose) => server.close(() => resolveClose()));
      // Upgraded sockets count as open connections: the server cannot stop until they close.
      await gitWatch.close();
      await processes.shutdown({ graceMs: config.shutdownGraceMs });
      // Waiting output reads hold connections open; they have their answer now.
      if ("closeAllConnections" in server) server.closeAllConnections();
      await stopped;
      logger.info("stopped");
      logger.flush?.();
    })();
    return closing;
  };
  return { url, port, processes, gitWatch, close };
}
