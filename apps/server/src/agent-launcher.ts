import { detectSandbox, ProcessLauncher, type SandboxCapability } from "@deckhand/sandbox";
import type { AgentEnvironmentPolicy } from "@deckhand/secrets";
import { WirePath } from "@deckhand/wire";
import type { Logger } from "pino";
import type { ServerConfig } from "./config.ts";
import type { ServerEndpoint } from "./server-endpoint.ts";

/** Whether bubblewrap works here, as config.json's sandbox mode asks (a probe process). */
export function detectServerSandbox(config: ServerConfig): Promise<SandboxCapability> {
  return detectSandbox(config.sandbox.mode);
}

/**
 * One launcher for every process started for an agent or a step: the environment policy and,
 * where bubblewrap works, the sandbox (`detected`, started before by the caller, or probed now).
 * A server without one says so once, here.
 */
export async function startAgentLauncher(
  config: ServerConfig,
  policy: AgentEnvironmentPolicy,
  logger: Logger,
  endpoint: ServerEndpoint,
  detected: Promise<SandboxCapability> = detectServerSandbox(config),
): Promise<ProcessLauncher> {
  const capability = await detected;
  if (capability.kind === "none" && config.sandbox.mode === "auto") {
    logger.warn(
      { sandbox: "none", reason: capability.reason },
      "agents, their commands and local batch steps run UNSANDBOXED, as this server's user: they can read what this user can; see docs/operations/security.md",
    );
  } else if (capability.kind === "bubblewrap" && capability.internetFallback !== null) {
    logger.warn({ reason: capability.internetFallback }, "sandboxed steps share the network");
  }
  return new ProcessLauncher({
    capability,
    settings: config.sandbox,
    policy,
    sourceEnvironment: process.env,
    hidden: [config.dataDir, config.providersConfigPath],
    // Sandboxed agents reach the model proxy through a socket that serves nothing else.
    modelProxy: {
      pathPrefix: WirePath.modelProvider,
      port: () => endpoint.port(),
      fetch: (request) => endpoint.fetch(request),
    },
    onWarning: (message, error) => logger.warn({ err: error }, message),
  });
}
