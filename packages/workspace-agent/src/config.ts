import { existsSync, statSync } from "node:fs";
import { isAbsolute, resolve } from "node:path";
import { isLoopbackHost, normalizeHostPattern } from "@deckhand/http-kit";
import { AGENT_DEFAULT_LISTEN, WireEnv } from "@deckhand/wire";
import { z } from "zod";
import { AgentError } from "./agent-error.ts";

export interface AgentConfig {
  host: string;
  port: number;
  /** Workspace root: the file API is confined to it and processes start in it by default. */
  root: string;
  /** Bearer token every request must carry; null only on loopback. */
  token: string | null;
  maxRunningProcesses: number;
  terminateGraceMs: number;
  /** How long shutdown waits for process groups after SIGTERM before SIGKILL. */
  shutdownGraceMs: number;
  logLevel: "fatal" | "error" | "warn" | "info" | "debug" | "silent";
  /** The largest request body accepted (413 beyond it); 10 MiB when absent. */
  maxRequestBodyBytes?: number;
  /**
   * More Host names the agent answers to besides loopback ones and its listen address (a
   * `.domain` entry: that name and every name under it); none when absent.
   */
  allowedHosts?: string[];
}

/** What a caller may say; everything optional, defaults filled by `resolveAgentConfig`. */
export const AgentConfigInputSchema = z.strictObject({
  listen: z.string().optional(),
  dir: z.string().optional(),
  token: z.string().optional(),
  /** Comma-separated, as `--allowed-hosts` and the environment give it. */
  allowedHosts: z.string().optional(),
  maxRunningProcesses: z.coerce.number().int().min(1).max(10_000).optional(),
  terminateGraceMs: z.coerce.number().int().min(0).optional(),
  shutdownGraceMs: z.coerce.number().int().min(0).optional(),
  logLevel: z.enum(["fatal", "error", "warn", "info", "debug", "silent"]).optional(),
});
export type AgentConfigInput = z.infer<typeof AgentConfigInputSchema>;

/** Splits `host:port` (IPv6 in brackets: `[::1]:7421`). */
export function parseListenAddress(listen: string): { host: string; port: number } {
  const match = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(listen.trim());
  const port = match ? Number(match[2]) : Number.NaN;
  if (!match || !(port >= 0 && port <= 65_535)) {
    throw new AgentError(
      "invalid_config",
      `--listen "${listen}" is not host:port; use for example ${AGENT_DEFAULT_LISTEN}`,
    );
  }
  const host = match[1]!.startsWith("[") ? match[1]!.slice(1, -1) : match[1]!;
  return { host, port };
}

/**
 * Validates flags and environment into a complete configuration. Every problem is an
 * AgentError that says which setting is wrong and how to fix it, raised before anything
 * listens.
 */
export function resolveAgentConfig(
  input: AgentConfigInput,
  environment: NodeJS.ProcessEnv = process.env,
  cwd: string = process.cwd(),
): AgentConfig {
  const parsed = AgentConfigInputSchema.safeParse(input);
  if (!parsed.success) {
    const problems = parsed.error.issues
      .map((issue) => `--${issue.path.join(".")}: ${issue.message}`)
      .join("; ");
    throw new AgentError("invalid_config", problems, { cause: parsed.error });
  }
  const options = parsed.data;
  const { host, port } = parseListenAddress(options.listen ?? AGENT_DEFAULT_LISTEN);
  const root = resolve(cwd, options.dir ?? ".");
  if (!existsSync(root) || !statSync(root).isDirectory()) {
    throw new AgentError(
      "invalid_config",
      `--dir "${options.dir ?? "."}" (${root}) is not a directory; point it at the workspace to serve`,
    );
  }
  const token = options.token ?? environment[WireEnv.agentToken] ?? null;
  if (token !== null && token.length === 0) {
    throw new AgentError("invalid_config", `the agent token is empty; set ${WireEnv.agentToken}`);
  }
  if (token === null && !isLoopbackHost(host)) {
    throw new AgentError(
      "invalid_config",
      `refusing to listen on ${host} without a token: anyone who can reach it could run commands. Set ${WireEnv.agentToken} (or --token), or listen on 127.0.0.1`,
    );
  }
  const allowedHostsSource =
    options.allowedHosts !== undefined ? "--allowed-hosts" : WireEnv.agentAllowedHosts;
  const allowedHosts = (options.allowedHosts ?? environment[WireEnv.agentAllowedHosts] ?? "")
    .split(",")
    .map((entry) => entry.trim())
    .filter((entry) => entry !== "");
  const badHost = allowedHosts.find((entry) => normalizeHostPattern(entry) === null);
  if (badHost !== undefined) {
    throw new AgentError(
      "invalid_config",
      `${allowedHostsSource} entry "${badHost}" is not a host name or address; give names without a port, comma-separated (.example.com for a domain and every name under it)`,
    );
  }
  return {
    host,
    port,
    root: isAbsolute(root) ? root : resolve(root),
    token,
    allowedHosts,
    maxRunningProcesses: options.maxRunningProcesses ?? 64,
    terminateGraceMs: options.terminateGraceMs ?? 5_000,
    shutdownGraceMs: options.shutdownGraceMs ?? 5_000,
    logLevel: options.logLevel ?? "info",
  };
}
