import {
  bearerAuth,
  DEFAULT_MAX_BODY_BYTES,
  type ErrorHandlingOptions,
  guardOrigin,
  HttpError,
  installErrorHandling,
  limitBody,
  logRequests,
  NO_CONTENT_SECURITY_POLICY,
  OriginPolicy,
  securityHeaders,
} from "@deckhand/http-kit";
import { createProcessRouter, type ProcessManager } from "@deckhand/process-manager";
import { type AgentHealthResponse, WireEnv, WireHeader, WirePath } from "@deckhand/wire";
import { createFileRouter, type WorkspaceFiles } from "@deckhand/workspace-files";
import { Hono } from "hono";
import type { Logger } from "pino";
import packageJson from "../package.json" with { type: "json" };

export interface AgentAppOptions {
  root: string;
  token: string | null;
  processes: ProcessManager;
  files: WorkspaceFiles;
  logger: Logger;
  /** The largest request body accepted (413 beyond it); http-kit's default, 10 MiB, when absent. */
  maxRequestBodyBytes?: number;
  /**
   * Which Host names the agent answers and which browser origins may act on it (see
   * `agentOriginPolicy`); loopback names only, and no other origin, when absent.
   */
  originPolicy?: OriginPolicy;
}

/**
 * The agent's Host names and origins: loopback names, its listen address and `allowedHosts`; it
 * serves no pages, so only its own origin (which no page has) may act on it.
 */
export function agentOriginPolicy(config: {
  host: string;
  allowedHosts?: readonly string[];
}): OriginPolicy {
  return new OriginPolicy({
    listenHost: config.host,
    allowedHosts: config.allowedHosts ?? [],
    hostAdvice: `add it to --allowed-hosts (or ${WireEnv.agentAllowedHosts})`,
    originAdvice: "call the agent from a program, not a web page",
  });
}

/** The workspace agent's HTTP application: auth, request logs, health, process and file APIs. */
export function createAgentApp(options: AgentAppOptions): Hono {
  const { logger } = options;
  const app = new Hono();
  const errorHandling: ErrorHandlingOptions = {
    onUnexpectedError: (error, context) =>
      logger.error(
        { err: error, method: context.req.method, path: context.req.path },
        "request failed",
      ),
  };
  installErrorHandling(app, errorHandling);

  // Outermost, so refusals get them too: the agent serves no page, so nothing may load or frame one.
  app.use(securityHeaders(NO_CONTENT_SECURITY_POLICY));
  app.use(
    logRequests(
      (entry) => logger.info(entry, "request"),
      // Only the chat id is logged from the headers; the Authorization header never is.
      (context) => {
        const chatId = context.req.header(WireHeader.chatId);
        return chatId ? { chat_id: chatId } : {};
      },
    ),
  );

  // Before anything reads the request: a rebinding page or another site's page gets nothing, even
  // from an agent without a token on loopback, which would otherwise run whatever it is sent.
  app.use(guardOrigin(options.originPolicy ?? agentOriginPolicy({ host: "127.0.0.1" })));

  // Before authentication: no client makes the agent buffer a body of any size.
  app.use(limitBody({ maxBytes: options.maxRequestBodyBytes ?? DEFAULT_MAX_BODY_BYTES }));

  if (options.token !== null) {
    app.use(
      bearerAuth({ token: options.token, tokenName: "bearer token", envName: WireEnv.agentToken }),
    );
  }

  app.get(WirePath.agentHealth, (context) => {
    const body: AgentHealthResponse = {
      status: "ok",
      version: packageJson.version,
      root: options.root,
      running_processes: options.processes.runningCount,
    };
    return context.json(body);
  });
  app.route(WirePath.processes, createProcessRouter(options.processes, errorHandling));
  app.route(WirePath.files, createFileRouter(options.files));
  // A plain GET of the watch path: the upgrade itself is handled beside the app (start-agent).
  app.get(WirePath.gitWatch, () => {
    throw new HttpError(
      426,
      "invalid_request",
      "this is a WebSocket endpoint; connect with a WebSocket client",
    );
  });
  return app;
}
