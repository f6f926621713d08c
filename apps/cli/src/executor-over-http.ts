// `deckhand executor --server-url` with an executor token: the workspace jobs come from the
// server's executor API through the typed server client, and everything they report goes back
// the same way; the executor holds no database credentials and mints no model tokens.
import {
  type BatchWorker,
  configuredRepositories,
  type ExecutionEnvironment,
  type ExecutorConfig,
  type ModelProviderAccess,
  startHttpExecutor,
} from "@deckhand/batches";
import { redactSecrets } from "@deckhand/secrets";
import { createServerClient } from "@deckhand/server-client";
import type { Logger } from "pino";
import type { ExecutorSettings } from "./executor-command.ts";

export interface ExecutorOverHttpOptions {
  serverUrl: string;
  executorToken: string;
  settings: Pick<ExecutorSettings, "dataDir" | "concurrency" | "id" | "leaseMs" | "graceMs">;
  config: Pick<ExecutorConfig, "codeHosts" | "codeHostConnections">;
  /** This machine's execution environment, given the model access the server lends. */
  environment: (modelProvider: ModelProviderAccess) => ExecutionEnvironment;
  /** Where git URL hosts' connection tokens are read from. */
  outerEnvironment: Readonly<Record<string, string | undefined>>;
  logger: Logger;
}

/**
 * Starts claiming jobs from the server. `refused` settles when the server refuses the token (an
 * admin revoked it): running jobs were stopped, nothing more is claimed.
 */
export async function startExecutorOverHttp(options: ExecutorOverHttpOptions): Promise<{
  worker: BatchWorker;
  refused: Promise<unknown>;
}> {
  const { logger, settings } = options;
  let refuse: (error: unknown) => void = () => {};
  const refused = new Promise<unknown>((resolve) => {
    refuse = resolve;
  });
  const executor = startHttpExecutor({
    client: createServerClient({ baseUrl: options.serverUrl, token: options.executorToken }),
    environment: options.environment,
    repositories: configuredRepositories(
      options.config,
      settings.dataDir,
      options.outerEnvironment,
    ),
    concurrency: settings.concurrency,
    ...(settings.id !== null ? { executorId: settings.id } : {}),
    leaseMs: settings.leaseMs,
    shutdownTimeoutMs: settings.graceMs,
    redact: (text) => redactSecrets(text),
    onError: (error) => logger.warn({ err: error }, "executor API call failed; retrying"),
    onRefused: refuse,
  });
  // Leftover checkouts of a killed predecessor are gone before it says it is ready.
  await executor.ready;
  return {
    worker: {
      workerId: executor.executorId,
      get activeCount() {
        return executor.activeCount;
      },
      stop: () => executor.stop(),
    },
    refused,
  };
}
