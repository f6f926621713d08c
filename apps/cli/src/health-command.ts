// `deckhand health server|agent|executor`: whether a Deckhand process on this machine is
// healthy, as an exit code and one line. The images' HEALTHCHECK runs it, and so can a
// Kubernetes exec probe or a supervisor; it reads the same settings the process does
// (DECKHAND_LISTEN, DECKHAND_DATA_DIR, the tokens), so a container needs no extra configuration.
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { errorMessage } from "@deckhand/errors";
import { SERVER_DEFAULT_LISTEN } from "@deckhand/server-app";
import { createServerClient, ServerApiError } from "@deckhand/server-client";
import {
  AGENT_DEFAULT_LISTEN,
  AgentHealthResponseSchema,
  WireEnv,
  WireHeader,
  WirePath,
} from "@deckhand/wire";
import { parseListenAddress } from "@deckhand/workspace-agent";
import {
  checkExecutorHealth,
  EXECUTOR_HEALTH_FILE,
  type HealthVerdict,
} from "./executor-health.ts";

const DEFAULT_TIMEOUT_MS = 5_000;

export const healthUsage = `Usage: deckhand health <server|agent|executor> [options]

Checks a Deckhand process on this machine: exits 0 when it is healthy and 1 when it is not,
with one line saying why (2 on bad usage). Container health checks and supervisors run it.

  server    GET /api/health of the server: healthy when it answers "ok" (database, queue
            and its workspace agent reachable)
  agent     GET /api/v0/health of a workspace agent
  executor  reads the ${EXECUTOR_HEALTH_FILE} a running executor rewrites every 5 s in its
            data directory: healthy while it is fresh and the executor reaches its queue

Options:
  --url URL        the server (default: where $${WireEnv.serverListen} says it listens, else
                   http://${SERVER_DEFAULT_LISTEN}) or the agent (default: http://${AGENT_DEFAULT_LISTEN})
  --data-dir DIR   the executor's data directory (default $${WireEnv.serverDataDir}, else ~/.deckhand)
  --timeout-ms N   how long to wait for an answer (default ${DEFAULT_TIMEOUT_MS})
  -h, --help       show this help

The server's token is read from $${WireEnv.adminToken}, the agent's from $${WireEnv.agentToken}.
`;

export interface HealthIo {
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown };
  environment: NodeJS.ProcessEnv;
  cwd: string;
  homeDir: string;
  fetch: typeof fetch;
}

function defaultIo(): HealthIo {
  return {
    stdout: process.stdout,
    stderr: process.stderr,
    environment: process.env,
    cwd: process.cwd(),
    homeDir: homedir(),
    fetch: globalThis.fetch,
  };
}

class HealthUsageError extends Error {}

/** `host` as a URL's host: loopback for a wildcard address, brackets around IPv6. */
function reachableHost(host: string): string {
  if (host === "0.0.0.0" || host === "" || host === "::") return "127.0.0.1";
  return host.includes(":") ? `[${host}]` : host;
}

/** The server's URL from the address it listens on (DECKHAND_LISTEN), as the server reads it. */
function serverUrlFromEnvironment(environment: NodeJS.ProcessEnv): string {
  const listen = environment[WireEnv.serverListen] || SERVER_DEFAULT_LISTEN;
  let address: { host: string; port: number };
  try {
    address = parseListenAddress(listen);
  } catch {
    throw new HealthUsageError(
      `${WireEnv.serverListen} "${listen}" is not host:port; fix it, or pass --url`,
    );
  }
  return `http://${reachableHost(address.host)}:${address.port}`;
}

function checkedUrl(value: string): string {
  const url = URL.canParse(value) ? new URL(value) : null;
  if (url === null || (url.protocol !== "http:" && url.protocol !== "https:")) {
    throw new HealthUsageError(`--url "${value}" is not an http:// or https:// URL`);
  }
  return url.toString().replace(/\/$/, "");
}

async function checkServer(url: string, io: HealthIo, timeoutMs: number): Promise<HealthVerdict> {
  const token = io.environment[WireEnv.adminToken] || null;
  const client = createServerClient({ baseUrl: url, token, fetch: io.fetch });
  try {
    // 503 is an answer too: its body says what is down.
    const health = await client.getHealth(undefined, { signal: AbortSignal.timeout(timeoutMs) });
    const down = [
      ...(health.database.ok ? [] : [`database (${health.database.kind})`]),
      ...(health.queue.ok ? [] : ["queue"]),
      ...(health.agent !== null && !health.agent.ok ? ["workspace agent"] : []),
    ];
    return health.status === "ok"
      ? { healthy: true, message: `server ${url} is healthy (version ${health.version})` }
      : { healthy: false, message: `server ${url} is ${health.status}: ${down.join(", ")} down` };
  } catch (error) {
    const advice =
      error instanceof ServerApiError && error.status === 401
        ? `; set ${WireEnv.adminToken} where this check runs (the server needs a token beyond loopback)`
        : "";
    return { healthy: false, message: `server ${url}: ${errorMessage(error)}${advice}` };
  }
}

async function checkAgent(url: string, io: HealthIo, timeoutMs: number): Promise<HealthVerdict> {
  const token = io.environment[WireEnv.agentToken] || null;
  try {
    const response = await io.fetch(`${url}${WirePath.agentHealth}`, {
      headers: token === null ? {} : { [WireHeader.authorization]: `Bearer ${token}` },
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await response.text();
    if (response.status === 401) {
      return {
        healthy: false,
        message: `agent ${url} answered 401; set ${WireEnv.agentToken} where this check runs`,
      };
    }
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    const health = AgentHealthResponseSchema.safeParse(body);
    if (!response.ok || !health.success) {
      return {
        healthy: false,
        message: `agent ${url} answered ${response.status}: ${text.slice(0, 200)}`,
      };
    }
    return {
      healthy: true,
      message: `agent ${url} is healthy: ${health.data.running_processes} processes running in ${health.data.root}`,
    };
  } catch (error) {
    return { healthy: false, message: `agent ${url} is unreachable: ${errorMessage(error)}` };
  }
}

/** Runs `deckhand health`; 0 healthy, 1 not, 2 bad usage. */
export async function runHealthCommand(
  argv: string[],
  io: HealthIo = defaultIo(),
): Promise<number> {
  let verdict: HealthVerdict;
  try {
    const { values, positionals } = (() => {
      try {
        return parseArgs({
          args: argv,
          strict: true,
          allowPositionals: true,
          options: {
            url: { type: "string" },
            "data-dir": { type: "string" },
            "timeout-ms": { type: "string" },
            help: { type: "boolean", short: "h" },
          },
        });
      } catch (error) {
        throw new HealthUsageError(errorMessage(error));
      }
    })();
    if (values.help === true) {
      io.stdout.write(healthUsage);
      return 0;
    }
    const [what, ...extra] = positionals;
    if (extra.length > 0 || (what !== "server" && what !== "agent" && what !== "executor")) {
      throw new HealthUsageError(
        what === undefined
          ? "say what to check: server, agent or executor"
          : `cannot check "${[what, ...extra].join(" ")}"; use server, agent or executor`,
      );
    }
    const timeoutText = values["timeout-ms"];
    const timeoutMs = timeoutText === undefined ? DEFAULT_TIMEOUT_MS : Number(timeoutText);
    if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > 600_000) {
      throw new HealthUsageError(`--timeout-ms must be a whole number from 1 to 600000`);
    }
    if (what === "executor") {
      if (values.url !== undefined) throw new HealthUsageError("an executor has no --url");
      const dataDir = resolve(
        io.cwd,
        values["data-dir"] ??
          (io.environment[WireEnv.serverDataDir] || join(io.homeDir, ".deckhand")),
      );
      verdict = await checkExecutorHealth(dataDir);
    } else {
      if (values["data-dir"] !== undefined) {
        throw new HealthUsageError(`--data-dir is for an executor; a ${what} is asked at --url`);
      }
      const url =
        values.url !== undefined
          ? checkedUrl(values.url)
          : what === "server"
            ? serverUrlFromEnvironment(io.environment)
            : `http://${AGENT_DEFAULT_LISTEN}`;
      verdict =
        what === "server"
          ? await checkServer(url, io, timeoutMs)
          : await checkAgent(url, io, timeoutMs);
    }
  } catch (error) {
    if (!(error instanceof HealthUsageError)) throw error;
    io.stderr.write(`deckhand health: ${error.message}\nRun "deckhand health --help".\n`);
    return 2;
  }
  (verdict.healthy ? io.stdout : io.stderr).write(`${verdict.message}\n`);
  return verdict.healthy ? 0 : 1;
}
