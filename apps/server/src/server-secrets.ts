import { codeHostSecrets } from "@deckhand/batches";
import {
  type AgentEnvironmentPolicy,
  agentEnvironment,
  agentEnvironmentPolicy,
  rememberSecrets,
} from "@deckhand/secrets";
import type { ServerConfig } from "./config.ts";

/** The password in a PostgreSQL URL, as written and decoded; none for the embedded database. */
function databasePasswords(databaseUrl: string | null): string[] {
  if (databaseUrl === null) return [];
  try {
    const { password } = new URL(databaseUrl);
    return password === "" ? [] : [password, decodeURIComponent(password)];
  } catch {
    return [];
  }
}

/** How every process started for an agent or a step inherits this server's environment. */
export interface ServerAgentEnvironment {
  policy: AgentEnvironmentPolicy;
  /** What such a process inherits: this process's environment as `policy` leaves it. */
  environment: Record<string, string>;
}

/**
 * Deckhand's own secrets, remembered so this process redacts them wherever it redacts (logs,
 * events, parts, recordings, agent output), and the agent environment that never holds them.
 */
export function serverAgentEnvironment(config: ServerConfig): ServerAgentEnvironment {
  const ownSecrets = [
    ...Object.values(config.modelUpstreams).map((upstream) => upstream.apiKey),
    config.adminToken,
    config.databaseUrl,
    ...databasePasswords(config.databaseUrl),
    // Code host tokens as they are now (they are read again at each use, so a rotated one is
    // remembered then): redacted everywhere, and no variable holding one reaches an agent.
    ...config.codeHostConnections.map((connection) => process.env[connection.tokenEnv] || null),
    // Passwords in git URL code hosts: git gets them per command, and they are secrets alike.
    ...codeHostSecrets(config.codeHosts),
  ];
  rememberSecrets(ownSecrets);
  const policy = agentEnvironmentPolicy({
    secretNames: config.withheldEnv,
    secretValues: ownSecrets,
    deny: config.agentEnvironment.deny,
    allow: config.agentEnvironment.allow,
  });
  // One environment for every process started for an agent: native `execute`, ACP terminals
  // (both through the workspace agent), ACP agent processes and provider probes.
  return { policy, environment: agentEnvironment(policy, process.env) };
}
