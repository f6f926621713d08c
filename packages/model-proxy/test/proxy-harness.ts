// Runs the proxy on @hono/node-server in front of a fake upstream, with in-memory storage and a
// logger that keeps every line, so tests can look at everything the proxy produced.
import type { AddressInfo } from "node:net";
import {
  listen,
  NO_CONTENT_SECURITY_POLICY,
  OriginPolicy,
  type RequestLogEntry,
  securityHeaderSetter,
} from "@deckhand/http-kit";
import { type FakeUpstream, startFakeUpstream } from "@deckhand/testkit";
import { WireHeader, WirePath } from "@deckhand/wire";
import { type ServerType, serve } from "@hono/node-server";
import type { DirectEdge } from "../src/direct-handler.ts";
import type { LogFields, ModelProxyLogger } from "../src/logger.ts";
import { createModelProxyRoutes, type ModelProxyOptions } from "../src/model-proxy.ts";
import { InMemoryModelTokenStore, mintModelToken } from "../src/model-token.ts";
import { InMemoryUsageRecorder } from "../src/usage.ts";

export const OPENAI_KEY = "sk-upstream-openai-key-0123456789";
export const ANTHROPIC_KEY = "sk-ant-upstream-anthropic-key-0123456789";
export const GEMINI_KEY = "AIza-upstream-gemini-key-0123456789";
export const JOB_ID = "job-42";

export interface LogLine {
  level: string;
  message: string;
  fields: LogFields | undefined;
}

/** A logger that records everything it is given. */
export function recordingLogger(): ModelProxyLogger & { lines: LogLine[] } {
  const lines: LogLine[] = [];
  const write = (level: string) => (message: string, fields?: LogFields) => {
    lines.push({ level, message, fields });
  };
  return { lines, info: write("info"), warn: write("warn"), error: write("error") };
}

/** Serves a hono app on 127.0.0.1 with a random port, as the server would. */
export async function serveApp(app: {
  fetch: (request: Request) => Response | Promise<Response>;
}): Promise<{ origin: string; close: () => Promise<void> }> {
  const server = await new Promise<ServerType>((resolveServer) => {
    const instance = serve({ fetch: app.fetch, hostname: "127.0.0.1", port: 0 }, () =>
      resolveServer(instance),
    );
  });
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolveClose) => {
        server.close(() => resolveClose());
        if ("closeAllConnections" in server) server.closeAllConnections();
      }),
  };
}

export interface Harness {
  upstream: FakeUpstream;
  tokens: InMemoryModelTokenStore;
  usage: InMemoryUsageRecorder;
  logger: ReturnType<typeof recordingLogger>;
  /** The proxy's URL for one agent type, as an agent's base URL would be. */
  baseUrl(agentType: string): string;
  mint(options?: { jobId?: string; ttlMs?: number }): Promise<string>;
  /** Headers an agent sends: the token as a bearer token (or x-api-key) and the job id. */
  agentHeaders(token: string, options?: { jobId?: string; anthropic?: boolean }): Headers;
  /** How many requests reached the hono app (with `direct`, those the handler did not take). */
  appRequests(): number;
  close(): Promise<void>;
}

/** Serves the app behind the proxy's Node handler, as the server does, counting what reaches the app. */
async function serveDirect(
  app: { fetch: (request: Request) => Response | Promise<Response> },
  handler: ReturnType<ReturnType<typeof createModelProxyRoutes>["direct"]>,
  counted: { requests: number },
): Promise<{ origin: string; close: () => Promise<void> }> {
  const listening = await listen(
    (request) => {
      counted.requests += 1;
      return app.fetch(request);
    },
    { host: "127.0.0.1", port: 0 },
    (error) => error,
    handler,
  );
  const server = listening.server;
  return {
    origin: listening.url,
    close: () =>
      new Promise<void>((resolveClose) => {
        server.close(() => resolveClose());
        if ("closeAllConnections" in server) server.closeAllConnections();
      }),
  };
}

/**
 * The edge the server gives the proxy's Node handler, as tests see it: the loopback Host/Origin
 * check, a body limit, the security headers, and a log that keeps its lines in `log`.
 */
export function serverEdge(maxBytes: number, log: RequestLogEntry[] = []): DirectEdge {
  return {
    originPolicy: new OriginPolicy({
      listenHost: "127.0.0.1",
      hostAdvice: "add it to allowedHosts",
      originAdvice: "add it to allowedOrigins",
    }),
    bodyLimit: { maxBytes, setting: "the proxy's limit" },
    securityHeaders: securityHeaderSetter(NO_CONTENT_SECURITY_POLICY),
    logRequest: (entry) => log.push(entry),
  };
}

/**
 * The proxy in front of a fake upstream. With `direct`, its routes are answered by its Node
 * handler ahead of the app, with that edge (what the server's middleware does to them).
 */
export async function startHarness(
  overrides: Partial<ModelProxyOptions> & { upstreamUrl?: string; direct?: DirectEdge } = {},
): Promise<Harness> {
  const upstream = await startFakeUpstream();
  const tokens = new InMemoryModelTokenStore();
  const usage = new InMemoryUsageRecorder();
  const logger = recordingLogger();
  const target = overrides.upstreamUrl ?? upstream.url;
  const { direct, upstreamUrl: _upstreamUrl, ...options } = overrides;
  const routes = createModelProxyRoutes({
    upstreams: {
      codex: { kind: "openai", baseUrl: `${target}/v1`, apiKey: OPENAI_KEY },
      "claude-code": { kind: "anthropic", baseUrl: target, apiKey: ANTHROPIC_KEY },
      gemini: { kind: "gemini", baseUrl: target, apiKey: GEMINI_KEY },
    },
    tokens,
    usage,
    logger,
    ...options,
  });
  const counted = { requests: 0 };
  const app = {
    fetch: (request: Request) => {
      counted.requests += 1;
      return routes.app.fetch(request);
    },
  };
  const { origin, close } = direct
    ? await serveDirect(routes.app, routes.direct(direct), counted)
    : await serveApp(app);
  return {
    upstream,
    tokens,
    usage,
    logger,
    baseUrl: (agentType) => `${origin}${WirePath.modelProvider}/${agentType}`,
    async mint(options = {}) {
      const minted = await mintModelToken(tokens, {
        jobId: options.jobId ?? JOB_ID,
        ttlMs: options.ttlMs ?? 60_000,
      });
      return minted.token;
    },
    agentHeaders(token, options = {}) {
      const headers = new Headers({ "content-type": "application/json" });
      if (options.anthropic) {
        headers.set("x-api-key", token);
        headers.set("anthropic-version", "2023-06-01");
      } else {
        headers.set(WireHeader.authorization, `Bearer ${token}`);
      }
      headers.set(WireHeader.jobId, options.jobId ?? JOB_ID);
      return headers;
    },
    appRequests: () => counted.requests,
    async close() {
      await close();
      await upstream.close();
    },
  };
}
