// What every process that runs batch workspace jobs composes the same way: the server (its own
// batch worker) and `deckhand executor` on other machines. A data directory gives the clone cache
// and the checkouts; its config.json gives the code hosts and what steps may inherit of the
// environment; a task worker of its own claims only the batch job types from the shared queue.
import { readFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { type CodeHostConnection, CodeHostConnectionsSchema } from "@deckhand/code-hosts";
import { type DbHandle, TaskRegistry, TaskWorker, type WorkerOptions } from "@deckhand/db";
import { errnoCode, errorMessage } from "@deckhand/errors";
import {
  type KubernetesRuntimeConfig,
  KubernetesRuntimeConfigSchema,
} from "@deckhand/kubernetes-runtime/config";
import {
  type ModelBudgetsFile,
  ModelBudgetsFileSchema,
  type ModelPricesFile,
  ModelPricesFileSchema,
} from "@deckhand/model-proxy";
import {
  type AgentStartTimeoutSettings,
  AgentStartTimeoutsFileSchema,
  agentStartTimeoutsFrom,
} from "@deckhand/providers";
import {
  type SandboxSettings,
  SandboxSettingsFileSchema,
  sandboxSettings,
} from "@deckhand/sandbox";
import {
  type BatchCodingAgentOptions,
  BatchCodingAgentOptionsSchema,
  type RolloutWindow,
  RolloutWindowsSchema,
} from "@deckhand/wire";
import { z } from "zod";
import { BatchRunService, type BatchRunServiceOptions } from "./batch-run-service.ts";
import { BatchesError } from "./batches-error.ts";
import type { BatchSpend } from "./budgets/batch-spend.ts";
import { type CodeHost, CodeHostsSchema } from "./code-host-config.ts";
import { batchDirectories } from "./execution-environment.ts";
import { createHookRunner } from "./publishing/changeset-hooks.ts";
import { ChangesetPublisher } from "./publishing/changeset-publisher.ts";
import { CodeHostAccess } from "./publishing/code-host-access.ts";
import { RepositorySource } from "./repository-source.ts";

/**
 * What a process gives its batch-run service: everything the service takes, with publishing
 * (and its hooks) made from the code host connections.
 */
export type CreateBatchRunServiceOptions = Omit<
  BatchRunServiceOptions,
  "publishing" | "budgets"
> & {
  /**
   * Model spend (budgets/batch-spend.ts): runs whose budget is spent start no more workspaces,
   * and batch changes report their spend priced with its table.
   */
  spend?: BatchSpend;
  /**
   * Publishing to code hosts (`codeHostConnections` of config.json): tokens are read from
   * `environment` at each use. Without connections nothing is published.
   */
  publishing?: {
    connections: () => readonly CodeHostConnection[];
    environment: Readonly<Record<string, string | undefined>>;
    trackingIntervalMs?: number;
    onError?: (error: unknown, context: { changesetId: string }) => void;
    /** config.json's `batchChanges.rolloutWindows`; null or absent for none. */
    rolloutWindows?: () => readonly RolloutWindow[] | null;
  };
};

/**
 * The batch-run service of a process, as the server and executors make it: with its publisher
 * (pull requests, tracking, hooks run in the same execution environment) when code host
 * connections are configured, since the apply job and tracking run on whichever batch worker
 * claims them.
 */
export function createBatchRunService(options: CreateBatchRunServiceOptions): BatchRunService {
  const { publishing: publishingOptions, spend, ...rest } = options;
  let service: BatchRunService | null = null;
  let publishing: ChangesetPublisher | undefined;
  if (publishingOptions !== undefined) {
    const access = new CodeHostAccess({
      connections: publishingOptions.connections,
      environment: publishingOptions.environment,
    });
    publishing = new ChangesetPublisher({
      database: options.database,
      access,
      hooks: createHookRunner({
        access,
        codeHosts: options.codeHosts,
        environment: options.environment,
      }),
      retryWorkspace: async (workspaceId) => service?.retryWorkspace(workspaceId),
      ...(publishingOptions.trackingIntervalMs !== undefined
        ? { trackingIntervalMs: publishingOptions.trackingIntervalMs }
        : {}),
      ...(publishingOptions.onError ? { onError: publishingOptions.onError } : {}),
      ...(publishingOptions.rolloutWindows
        ? { rolloutWindows: publishingOptions.rolloutWindows }
        : {}),
      ...(spend ? { ledger: spend.ledger } : {}),
    });
  }
  service = new BatchRunService({
    ...rest,
    ...(publishing ? { publishing } : {}),
    ...(spend ? { budgets: spend } : {}),
  });
  return service;
}

/**
 * Where a process with this configuration finds repositories: its code hosts, git URL hosts
 * cloned into its data directory, with the code host connections' tokens (read from
 * `environment`) for their URLs, as the batch-run services of the server and executors find
 * them. `deckhand batch workspaces` lists a spec's workspaces with it.
 */
export function configuredRepositories(
  config: Pick<ExecutorConfig, "codeHosts" | "codeHostConnections">,
  dataDir: string,
  environment: Readonly<Record<string, string | undefined>>,
): RepositorySource {
  const access = new CodeHostAccess({ connections: () => config.codeHostConnections, environment });
  return new RepositorySource({
    codeHosts: () => config.codeHosts,
    cacheDirectory: batchDirectories(dataDir).cacheDirectory,
    connections: access.gitEnvironment,
  });
}

/** How often a batch worker ends jobs the queue gave up on, by default. */
export const BATCH_RECOVERY_INTERVAL_MS = 30_000;

export interface BatchWorkerOptions {
  database: DbHandle;
  service: BatchRunService;
  /** Workspace jobs run at once. */
  concurrency: number;
  /** Names the worker in `tasks.locked_by` and `workspaces.executor`; unique per process. */
  workerId?: string;
  /**
   * How long a claimed job stays claimed without a heartbeat: after it, a job of a worker that
   * died is taken over by another. Default 30 s; heartbeats come every third of it.
   */
  leaseMs?: number;
  /** How long `stop()` lets running jobs finish before releasing them to other workers. */
  shutdownTimeoutMs?: number;
  /** How often abandoned jobs are looked for (`recoverAbandonedJobs`). Default 30 s. */
  recoveryIntervalMs?: number;
  /** The fallback poll when a NOTIFY is missed. Default 1 s. */
  pollIntervalMs?: number;
  onError?: (error: unknown) => void;
  onTaskFailed?: WorkerOptions["onTaskFailed"];
  /** Scrubs a failed job's error text before it is stored. */
  redact?: (text: string) => string;
  /** Told when abandoned workspaces or runs were failed. */
  onRecovered?: (recovered: { workspaces: number; runs: number }) => void;
}

export interface BatchWorker {
  readonly workerId: string;
  /** Jobs running now. */
  readonly activeCount: number;
  /**
   * Stops claiming, lets running jobs finish within the shutdown timeout, then releases the
   * rest to other workers (without spending an attempt; they resume from the step cache).
   */
  stop(): Promise<void>;
}

/**
 * Starts a task worker for the batch job types only (workspace jobs and applies) on the shared
 * queue, after removing checkouts no attempt runs any more (`sweepCheckouts`), and ends jobs the
 * queue gave up on now and every `recoveryIntervalMs`.
 */
export async function startBatchWorker(options: BatchWorkerOptions): Promise<BatchWorker> {
  const registry = new TaskRegistry();
  options.service.register(registry);
  const onError = options.onError ?? (() => {});
  const worker = new TaskWorker({
    database: options.database,
    registry,
    concurrency: options.concurrency,
    ...(options.workerId !== undefined ? { workerId: options.workerId } : {}),
    ...(options.leaseMs !== undefined ? { leaseMs: options.leaseMs } : {}),
    ...(options.shutdownTimeoutMs !== undefined
      ? { shutdownTimeoutMs: options.shutdownTimeoutMs }
      : {}),
    ...(options.pollIntervalMs !== undefined ? { pollIntervalMs: options.pollIntervalMs } : {}),
    onError,
    ...(options.onTaskFailed ? { onTaskFailed: options.onTaskFailed } : {}),
    ...(options.redact ? { redact: options.redact } : {}),
  });
  let recovering: Promise<void> = Promise.resolve();
  const recover = () => {
    recovering = options.service.recoverAbandonedJobs().then((recovered) => {
      if (recovered.workspaces + recovered.runs > 0) options.onRecovered?.(recovered);
    }, onError);
  };
  // What a killed predecessor in this data directory left on disk goes first.
  await options.service.sweepCheckouts().catch(onError);
  await worker.start();
  recover();
  const timer = setInterval(recover, options.recoveryIntervalMs ?? BATCH_RECOVERY_INTERVAL_MS);
  timer.unref();
  let stopping: Promise<void> | null = null;
  return {
    workerId: worker.workerId,
    get activeCount() {
      return worker.activeCount;
    },
    stop() {
      stopping ??= (async () => {
        clearInterval(timer);
        await worker.stop();
        await recovering;
      })();
      return stopping;
    },
  };
}

/** What a batch executor reads of `<data-dir>/config.json`; other keys are the server's. */
const ExecutorConfigFileSchema = z.object({
  databaseUrl: z.string().min(1).optional(),
  codeHosts: CodeHostsSchema.optional(),
  agentEnvironment: z
    .object({
      deny: z.array(z.string().regex(/^[A-Za-z0-9_*]+$/)).optional(),
      allow: z.array(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/)).optional(),
    })
    .optional(),
  modelUpstreams: z
    .record(
      z.string(),
      z.object({ apiKeyEnv: z.string(), models: z.array(z.string().min(1)).optional() }),
    )
    .optional(),
  providersConfig: z.string().min(1).optional(),
  agentStartTimeouts: AgentStartTimeoutsFileSchema.optional(),
  codeHostConnections: CodeHostConnectionsSchema.optional(),
  changesetTracking: z.object({ intervalSeconds: z.number().positive().optional() }).optional(),
  codingAgent: BatchCodingAgentOptionsSchema.optional(),
  sandbox: SandboxSettingsFileSchema.optional(),
  kubernetes: KubernetesRuntimeConfigSchema.optional(),
  modelBudgets: ModelBudgetsFileSchema.optional(),
  modelPrices: ModelPricesFileSchema.optional(),
  batchChanges: z.object({ rolloutWindows: RolloutWindowsSchema.nullable().optional() }).optional(),
});

export interface ExecutorConfig {
  /** `databaseUrl`: the server's database, when the file names it (flags and env come first). */
  databaseUrl: string | null;
  /** `codeHosts`: where workspaces' repositories are found (the same as the server's). */
  codeHosts: CodeHost[];
  /** `agentEnvironment`: what steps may inherit beyond the default rules. */
  agentEnvironment: { deny: string[]; allow: string[] };
  /**
   * The upstreams' `apiKeyEnv` and the code host connections' `tokenEnv` names: Deckhand's
   * secrets, never passed to a step.
   */
  withheldEnv: string[];
  /** `codeHostConnections`: where applied changesets are published (the server's list). */
  codeHostConnections: CodeHostConnection[];
  /** How often published changesets are refreshed, when this process tracks them. */
  changesetTrackingIntervalMs: number;
  /** `codingAgent`: agent versions, models and install source (the server's). */
  codingAgent: BatchCodingAgentOptions;
  /** `sandbox`: how local steps and hooks are confined (the server's setting). */
  sandbox: SandboxSettings;
  /** The providers config `acp` steps start agents from (the server's `providersConfig`). */
  providersConfigPath: string;
  /** `agentStartTimeouts`: how long agents of `acp` steps may take to start. */
  agentStartTimeouts: AgentStartTimeoutSettings;
  /** The agent types the server's model proxy serves (`modelUpstreams`), with their models. */
  modelUpstreams: Record<string, { models: string[] }>;
  /** `kubernetes`: the cluster the steps of `kubernetes` runs run in; null without one. */
  kubernetes: KubernetesRuntimeConfig | null;
  /** `modelBudgets`: the server's spend limits (a run whose budget is spent starts no more). */
  modelBudgets: ModelBudgetsFile;
  /** `modelPrices`: what model tokens cost, for cost budgets. */
  modelPrices: ModelPricesFile | undefined;
  /** `batchChanges.rolloutWindows`: when this process's rollout turns may publish. */
  rolloutWindows: RolloutWindow[] | null;
}

/**
 * Reads what a batch executor needs of `<data-dir>/config.json` (the server's file: keys only the
 * server reads are ignored). A missing file is an empty configuration; a file that does not
 * parse is an `invalid_config` error naming the key.
 */
export async function readExecutorConfig(dataDir: string): Promise<ExecutorConfig> {
  const path = join(dataDir, "config.json");
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    if (errnoCode(error) === "ENOENT") {
      return {
        databaseUrl: null,
        codeHosts: [],
        agentEnvironment: { deny: [], allow: [] },
        withheldEnv: [],
        codeHostConnections: [],
        changesetTrackingIntervalMs: DEFAULT_TRACKING_INTERVAL_MS,
        codingAgent: {},
        sandbox: sandboxSettings(undefined),
        providersConfigPath: join(dataDir, "providers.json"),
        agentStartTimeouts: agentStartTimeoutsFrom(undefined),
        modelUpstreams: {},
        kubernetes: null,
        modelBudgets: {},
        modelPrices: undefined,
        rolloutWindows: null,
      };
    }
    throw new BatchesError("invalid_config", `cannot read ${path}: ${errorMessage(error)}`, {
      cause: error,
    });
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new BatchesError("invalid_config", `${path} is not valid JSON: ${errorMessage(error)}`, {
      cause: error,
    });
  }
  const parsed = ExecutorConfigFileSchema.safeParse(raw);
  if (!parsed.success) {
    const problems = parsed.error.issues
      .map((issue) => `${issue.path.join(".") || "(top level)"}: ${issue.message}`)
      .join("; ");
    throw new BatchesError("invalid_config", `${path}: ${problems}`, { cause: parsed.error });
  }
  const file = parsed.data;
  return {
    databaseUrl: file.databaseUrl ?? null,
    codeHosts: file.codeHosts ?? [],
    agentEnvironment: {
      deny: file.agentEnvironment?.deny ?? [],
      allow: file.agentEnvironment?.allow ?? [],
    },
    withheldEnv: [
      ...Object.values(file.modelUpstreams ?? {}).map((upstream) => upstream.apiKeyEnv),
      ...(file.codeHostConnections ?? []).map((connection) => connection.tokenEnv),
    ],
    codeHostConnections: file.codeHostConnections ?? [],
    changesetTrackingIntervalMs:
      (file.changesetTracking?.intervalSeconds ?? DEFAULT_TRACKING_INTERVAL_MS / 1_000) * 1_000,
    codingAgent: file.codingAgent ?? {},
    sandbox: sandboxSettings(file.sandbox),
    providersConfigPath: resolve(dataDir, file.providersConfig ?? "providers.json"),
    agentStartTimeouts: agentStartTimeoutsFrom(file.agentStartTimeouts),
    modelUpstreams: Object.fromEntries(
      Object.entries(file.modelUpstreams ?? {}).map(([agentType, upstream]) => [
        agentType,
        { models: upstream.models ?? [] },
      ]),
    ),
    kubernetes: file.kubernetes ?? null,
    modelBudgets: file.modelBudgets ?? {},
    modelPrices: file.modelPrices,
    rolloutWindows: file.batchChanges?.rolloutWindows ?? null,
  };
}

/** How often published changesets are refreshed unless config.json says otherwise: 5 minutes. */
const DEFAULT_TRACKING_INTERVAL_MS = 300_000;
