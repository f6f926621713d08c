import type { DbHandle } from "@deckhand/db";
import type { AgentTurns } from "@deckhand/sessions";
import { type ServerHealth, ServerPath, WireHeader, WirePath } from "@deckhand/wire";
import type { Hono } from "hono";
import type { Logger } from "pino";
import packageJson from "../package.json" with { type: "json" };

/** What the health check looks at (see ServerAppOptions for each). */
export interface HealthRouteOptions {
  database: DbHandle;
  logger: Logger;
  queueRunning?: () => boolean;
  agent: { url: string; token: string | null } | null;
  agentTurns: Pick<AgentTurns, "health">;
  fetch?: typeof globalThis.fetch;
  agentHealthTimeoutMs?: number;
}

/**
 * `GET /api/health`: the database, the queue (and whether its worker runs), the workspace agent
 * and the agents' backends; 503 `degraded` when any of the first three fails.
 */
export function registerHealthRoute(app: Hono, options: HealthRouteOptions): void {
  const { logger, database } = options;
  const fetchImpl = options.fetch ?? globalThis.fetch;
  // 5 s, not 1 s: the workspace agent is a second process on the same machine, and on a loaded
  // one (a test suite or a batch run beside it) its answer took over a second while it was well,
  // which turned the server "degraded" for a page that asked after a dropped stream.
  const agentTimeoutMs = options.agentHealthTimeoutMs ?? 5_000;
  const checkDatabase = async (): Promise<boolean> => {
    try {
      await database.query("select 1");
      return true;
    } catch (error) {
      logger.warn({ err: error }, "health: database check failed");
      return false;
    }
  };
  const checkQueue = async (): Promise<boolean> => {
    if (options.queueRunning && !options.queueRunning()) return false;
    try {
      // The queue is the tasks table; reaching it is what enqueueing needs.
      await database.query("select 1 from tasks limit 1");
      return true;
    } catch (error) {
      logger.warn({ err: error }, "health: queue check failed");
      return false;
    }
  };
  const checkAgent = async (): Promise<ServerHealth["agent"]> => {
    const agent = options.agent;
    if (!agent) return null;
    try {
      const response = await fetchImpl(`${agent.url}${WirePath.agentHealth}`, {
        headers: agent.token ? { [WireHeader.authorization]: `Bearer ${agent.token}` } : {},
        signal: AbortSignal.timeout(agentTimeoutMs),
      });
      await response.body?.cancel();
      return { ok: response.ok, url: agent.url };
    } catch {
      return { ok: false, url: agent.url };
    }
  };

  app.get(ServerPath.health, async (context) => {
    const [databaseOk, queueOk, agent, backends] = await Promise.all([
      checkDatabase(),
      checkQueue(),
      checkAgent(),
      options.agentTurns.health(),
    ]);
    const ok = databaseOk && queueOk && (agent === null || agent.ok);
    const body: ServerHealth = {
      status: ok ? "ok" : "degraded",
      version: packageJson.version,
      database: { ok: databaseOk, kind: database.kind },
      queue: { ok: queueOk },
      agent,
      // A crashed agent is reported, not counted against health: its next prompt restarts it.
      agents: backends.map((backend) => ({
        session_id: backend.sessionId,
        agent: backend.agent,
        status: backend.status,
        busy: backend.busy,
        idle_ms: backend.idleMs,
        last_error: backend.lastError,
      })),
    };
    return context.json(body, ok ? 200 : 503);
  });
}
