import { existsSync, readFileSync } from "node:fs";
import { availableParallelism, homedir } from "node:os";
import { join, resolve } from "node:path";
import { type CodeHost, CodeHostsSchema } from "@deckhand/batches";
import { type CodeHostConnection, CodeHostConnectionsSchema } from "@deckhand/code-hosts";
import {
  DEFAULT_MAX_BODY_BYTES,
  isLoopbackHost,
  normalizeHostPattern,
  normalizeOrigin,
  OriginPolicy,
} from "@deckhand/http-kit";
import {
  type KubernetesRuntimeConfig,
  KubernetesRuntimeConfigSchema,
} from "@deckhand/kubernetes-runtime/config";
import {
  type ModelBudgetsFile,
  ModelBudgetsFileSchema,
  type ModelPricesFile,
  ModelPricesFileSchema,
  type UpstreamConfig,
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
  ModelUpstreamKindSchema,
  type RolloutWindow,
  RolloutWindowsSchema,
  WireEnv,
} from "@deckhand/wire";
import { parseListenAddress } from "@deckhand/workspace-agent/config";
import { z } from "zod";
import { ServerError } from "./server-error.ts";
import { findWebDir } from "./web-ui.ts";

/**
 * The admin token's environment variable. It belongs in @deckhand/wire's WireEnv once clients
 * send it; until then it is defined here so the server has one spelling of it.
 */
export const ADMIN_TOKEN_ENV = WireEnv.adminToken;
/** The standard name for a PostgreSQL connection string. */
export const DATABASE_URL_ENV = "DATABASE_URL";
/** The environment's say on the listen address, data directory and log level (under the flags). */
export const LISTEN_ENV = WireEnv.serverListen;
export const DATA_DIR_ENV = WireEnv.serverDataDir;
export const LOG_LEVEL_ENV = WireEnv.serverLogLevel;
/** Where browsers reach the server, and which other names and origins it answers (config.json over none). */
export const PUBLIC_URL_ENV = WireEnv.serverPublicUrl;
export const ALLOWED_HOSTS_ENV = WireEnv.serverAllowedHosts;
export const ALLOWED_ORIGINS_ENV = WireEnv.serverAllowedOrigins;
/** The built web UI to serve at `/`, over the one found beside the server (see web-ui.ts). */
export const WEB_DIR_ENV = "DECKHAND_WEB_DIR";
export const SERVER_DEFAULT_LISTEN = "127.0.0.1:7420";
export const CONFIG_FILE_NAME = "config.json";
export const PROVIDERS_FILE_NAME = "providers.json";

const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "silent"] as const;
export type ServerLogLevel = (typeof LOG_LEVELS)[number];

export interface ServerConfig {
  host: string;
  port: number;
  /** Holds the embedded database (`db/`), workspaces (`workspaces/`) and `config.json`. */
  dataDir: string;
  /** PostgreSQL connection string; null means embedded PGlite in `<dataDir>/db`. */
  databaseUrl: string | null;
  /** The admin bearer token from the environment, if set. */
  adminToken: string | null;
  /**
   * Whether /api needs a bearer token. Always beyond loopback: without an admin token the
   * server generates one at first start and prints it once.
   */
  requireAuth: boolean;
  /** Revoke the generated admin token and print a new one (the operator lost it). */
  resetAdminToken: boolean;
  /** Agent type → model upstream, with the key already read from its environment variable. */
  modelUpstreams: Record<string, UpstreamConfig>;
  /** Agent type → the models its upstream serves (`modelUpstreams.<type>.models`), default first. */
  upstreamModels: Record<string, string[]>;
  /**
   * The variables holding upstream keys and code host tokens: never passed on to an agent
   * process, whatever `agentEnvironment.allow` says.
   */
  withheldEnv: string[];
  /**
   * Variables (names or `*` patterns) agent processes do not inherit on top of the default deny
   * list, and names they inherit although a deny entry matches (see @deckhand/secrets).
   */
  agentEnvironment: { deny: string[]; allow: string[] };
  /** The providers config file (`<dataDir>/providers.json` unless configured). */
  providersConfigPath: string;
  /**
   * How long ACP agents may take to answer `initialize` and to open a session, for everyone and
   * per provider id (`agentStartTimeouts` of config.json); the providers' defaults fill the rest.
   */
  agentStartTimeouts: AgentStartTimeoutSettings;
  /** The model the native agent uses; the built-in default when null. */
  nativeModel: string | null;
  /** Further models a session or message may ask the native agent for. */
  nativeModels: string[];
  /** Tasks (agent turns) run at once by this process. */
  taskConcurrency: number;
  /**
   * Batch workspace jobs run at once by this process; the CPU count unless configured. 0 runs
   * none: `deckhand executor` processes on the same PostgreSQL database run them.
   */
  batchConcurrency: number;
  /** Where batch specs find repositories (`codeHosts` of config.json). */
  codeHosts: CodeHost[];
  /**
   * Where changesets are published (`codeHostConnections` of config.json): each host, its kind
   * and the variable holding its token.
   */
  codeHostConnections: CodeHostConnection[];
  /** How often published changesets are read back from their hosts. */
  changesetTrackingIntervalMs: number;
  /**
   * `batchChanges.rolloutWindows`: when (and how fast) every batch change's pull requests are
   * opened; null when none are configured (as fast as the hosts allow).
   */
  rolloutWindows: RolloutWindow[] | null;
  /** `modelBudgets`: the most every job, run, session and UTC day may spend on models. */
  modelBudgets: ModelBudgetsFile;
  /** `modelPrices`: each model's price per million tokens, for cost budgets and reports. */
  modelPrices: ModelPricesFile | undefined;
  /**
   * How container steps find their runtime: `restrictedHost` true runs Podman with runc, cgroupfs
   * and fixed ulimits, for hosts where its defaults fail and /etc/containers cannot be changed;
   * false never does; unset (undefined) finds out by trying a container.
   */
  containerRuntime: { restrictedHost: boolean | undefined };
  /**
   * Where the steps of `kubernetes` runs run as Jobs (`kubernetes` of config.json); null when the
   * file has no such section (such runs then fail, saying so).
   */
  kubernetes: KubernetesRuntimeConfig | null;
  /** Defaults for batch `codingAgent` steps; a run's `coding_agent` options override them. */
  codingAgent: BatchCodingAgentOptions;
  /**
   * Requests each model-provider token may make: a burst, refilled per second; false turns the
   * limit off. The model proxy's default when null.
   */
  modelProxyRateLimit: { burst: number; perSecond: number } | false | null;
  /** Start a local workspace agent for the projects on this machine. */
  workspaceAgent: boolean;
  /**
   * How agents, their commands, local steps, hooks and probes are confined (see
   * docs/operations/security.md): bubblewrap where it works by default.
   */
  sandbox: SandboxSettings;
  /** The largest request body `/api` and the local workspace agent accept (413 beyond it). */
  maxRequestBodyBytes: number;
  logLevel: ServerLogLevel;
  /** The built web UI served at `/`; null (or absent) serves none. */
  webDir?: string | null;
  /**
   * The URL people open the server at when it is not the listen address (a reverse proxy, a
   * name): its host is one of the server's names and its origin may act on it. Null when unset.
   */
  publicUrl: string | null;
  /** More Host names the server answers to (`.example.com`: that name and every name under it). */
  allowedHosts: string[];
  /** More origins whose pages may act on the server, besides its own and the public URL's. */
  allowedOrigins: string[];
}

/** What flags say; everything optional. */
export const ServerFlagsSchema = z.strictObject({
  listen: z.string().min(1).optional(),
  publicUrl: z.string().min(1).optional(),
  dataDir: z.string().min(1).optional(),
  databaseUrl: z.string().min(1).optional(),
  workspaceAgent: z.boolean().optional(),
  logLevel: z.enum(LOG_LEVELS).optional(),
  resetAdminToken: z.boolean().optional(),
});
export type ServerFlags = z.infer<typeof ServerFlagsSchema>;

const ENVIRONMENT_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

const ModelUpstreamFileSchema = z.strictObject({
  kind: ModelUpstreamKindSchema,
  baseUrl: z.url({ protocol: /^https?$/ }),
  /** The name of the environment variable holding the key: keys never live in the file. */
  apiKeyEnv: z.string().regex(ENVIRONMENT_NAME, "must be an environment variable name"),
  /**
   * The models this upstream serves, its default first: agents that offer only the models they
   * are told of (opencode) are told these, and use the first unless a session picks another.
   */
  models: z.array(z.string().min(1)).min(1).optional(),
});

/** What agent processes inherit of the server's environment, beyond the built-in rules. */
const AgentEnvironmentFileSchema = z.strictObject({
  /** Names or patterns (`*` is any run of characters) withheld on top of the default list. */
  deny: z
    .array(
      z
        .string()
        .regex(/^[A-Za-z0-9_*]+$/, "must be a variable name, with * standing for any characters"),
    )
    .optional(),
  /** Exact names passed on although a deny entry matches; never Deckhand's own secrets. */
  allow: z
    .array(z.string().regex(ENVIRONMENT_NAME, "must be an environment variable name"))
    .optional(),
});

/** A host name, an address, or `.domain` for that name and every name under it. */
const AllowedHostSchema = z
  .string()
  .refine(
    (entry) => normalizeHostPattern(entry) !== null,
    "must be a host name or address without a port, or .example.com for a domain and every name under it",
  );
/** A browser origin: scheme, host and port, no path. */
const AllowedOriginSchema = z
  .string()
  .refine(
    (entry) => normalizeOrigin(entry) !== null,
    "must be an http(s) origin without a path, such as https://tools.example.com",
  );

/** `<data-dir>/config.json`. */
export const ServerConfigFileSchema = z.strictObject({
  listen: z.string().min(1).optional(),
  /** The URL people open the server at, when it is not the listen address (see Browser access). */
  publicUrl: z.string().min(1).optional(),
  /** More Host names the server answers to; `.example.com` is that name and every name under it. */
  allowedHosts: z.array(AllowedHostSchema).optional(),
  /** More origins whose pages may act on the server (`https://tools.example.com`). */
  allowedOrigins: z.array(AllowedOriginSchema).optional(),
  databaseUrl: z.string().min(1).optional(),
  workspaceAgent: z.boolean().optional(),
  logLevel: z.enum(LOG_LEVELS).optional(),
  modelUpstreams: z
    .record(
      z.string().regex(/^[a-z0-9][a-z0-9._-]*$/, "must be a lower-case path segment"),
      ModelUpstreamFileSchema,
    )
    .optional(),
  /** What agent processes inherit of the server's environment (docs/operations/server.md). */
  agentEnvironment: AgentEnvironmentFileSchema.optional(),
  /** The providers config file, relative to the data directory; `providers.json` by default. */
  providersConfig: z.string().min(1).optional(),
  /**
   * How long ACP agents may take to start, for provider probes and sessions alike:
   * `{"initializeSeconds": 90, "sessionSeconds": 90, "providers": {"opencode":
   * {"initializeSeconds": 180}}}` (90 s each by default).
   */
  agentStartTimeouts: AgentStartTimeoutsFileSchema.optional(),
  /** The model Deckhand's native agent asks its upstream for. */
  nativeModel: z.string().min(1).optional(),
  /** Further models a session or a message may choose for the native agent (besides nativeModel). */
  nativeModels: z.array(z.string().min(1)).optional(),
  /** Tasks (agent turns) this server runs at once; 8 by default. */
  taskConcurrency: z.number().int().min(1).max(256).optional(),
  /** Batch workspace jobs this server runs at once; the CPU count by default, 0 for none. */
  batchConcurrency: z.number().int().min(0).max(256).optional(),
  /**
   * Requests per model-provider token: `{burst, perSecond}` (default 60 at once, refilled at 2
   * per second), or false for no limit (an agent then paces itself by its upstream's limits).
   */
  modelProxyRateLimit: z
    .union([
      z.strictObject({ burst: z.number().int().min(1), perSecond: z.number().positive() }),
      z.literal(false),
    ])
    .optional(),
  /** The largest request body accepted, in bytes; 10 MiB by default (at least 64 KiB). */
  maxRequestBodyBytes: z
    .number()
    .int()
    .min(64 * 1024)
    .optional(),
  /** Where batch changes find repositories; `deckhand batch workspaces` reads it too. */
  codeHosts: CodeHostsSchema.optional(),
  /**
   * Code hosts changesets are published to (docs/code-hosts.md): `[{"type": "github", "url":
   * "https://github.com", "tokenEnv": "GITHUB_TOKEN"}]`. Only the token's variable is named here.
   */
  codeHostConnections: CodeHostConnectionsSchema.optional(),
  /** Published changesets are read back from their hosts this often; 300 seconds by default. */
  changesetTracking: z
    .strictObject({ intervalSeconds: z.number().int().min(5).max(86_400).optional() })
    .optional(),
  /**
   * Batch changes: `rolloutWindows`, as Sourcegraph's `batchChanges.rolloutWindows` with a
   * `timezone` per window (docs/operations/budgets-and-rollouts.md); null or absent for none.
   */
  batchChanges: z
    .strictObject({ rolloutWindows: RolloutWindowsSchema.nullable().optional() })
    .optional(),
  /**
   * The most each job, batch run, session and UTC day may spend on models:
   * `{"run": {"tokens": 2000000}, "day": {"cost": 50}}` (cost needs modelPrices).
   */
  modelBudgets: ModelBudgetsFileSchema.optional(),
  /**
   * Model prices per million tokens: `{"currency": "USD", "models": {"gpt-5*": {"input": 1.25,
   * "output": 10}}}`; a key ending in `*` prices every model starting with the rest.
   */
  modelPrices: ModelPricesFileSchema.optional(),
  containerRuntime: z.strictObject({ restrictedHost: z.boolean().optional() }).optional(),
  /**
   * The cluster the steps of `--runtime kubernetes` runs run in: namespace, kubeconfig (or the
   * pod's service account), work volume, resources, scheduling (docs/operations/kubernetes.md).
   */
  kubernetes: KubernetesRuntimeConfigSchema.optional(),
  /**
   * Agent versions, models and install source for batch `codingAgent` steps, e.g.
   * `{"versions": {"codex": "0.169.0"}, "models": {"codex": "gpt-5.5"}}`.
   */
  codingAgent: BatchCodingAgentOptionsSchema.optional(),
  /**
   * `"auto"` (bubblewrap where it works), `"bubblewrap"` or `"none"`, or `{"mode", "allowHosts",
   * "stepNetwork", "hide"}` (docs/operations/security.md).
   */
  sandbox: SandboxSettingsFileSchema.optional(),
});
export type ServerConfigFile = z.infer<typeof ServerConfigFileSchema>;

const flagName: Record<string, string> = {
  listen: "--listen",
  publicUrl: "--public-url",
  dataDir: "--data-dir",
  databaseUrl: "--database-url",
  workspaceAgent: "--no-agent",
  logLevel: "--log-level",
};

function describeIssues(error: z.ZodError, name: (path: PropertyKey[]) => string): string {
  return error.issues.map((issue) => `${name(issue.path)}: ${issue.message}`).join("; ");
}

function readConfigFile(path: string): ServerConfigFile {
  if (!existsSync(path)) return {};
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, "utf8"));
  } catch (error) {
    throw new ServerError(
      "invalid_config",
      `${path} is not valid JSON: ${(error as Error).message}`,
      {
        cause: error,
      },
    );
  }
  const parsed = ServerConfigFileSchema.safeParse(raw);
  if (!parsed.success) {
    const problems = describeIssues(parsed.error, (path) => path.join(".") || "(top level)");
    throw new ServerError("invalid_config", `${path}: ${problems}`, { cause: parsed.error });
  }
  return parsed.data;
}

function checkDatabaseUrl(url: string, source: string): string {
  if (!/^postgres(?:ql)?:\/\//.test(url)) {
    // The URL may hold a password; name the setting, not the value.
    throw new ServerError(
      "invalid_config",
      `${source} is not a PostgreSQL URL; use postgres://user:password@host:5432/database, or leave it unset for the embedded database`,
    );
  }
  return url;
}

function isLogLevel(value: string): value is ServerLogLevel {
  return (LOG_LEVELS as readonly string[]).includes(value);
}

/** The first value that is set, with the name of where it came from. */
function firstSet(candidates: [string | undefined, string][]): [string, string] {
  const found = candidates.find(([value]) => value !== undefined);
  if (!found) throw new Error("no candidate is set; the last one must be a default");
  return found as [string, string];
}

/**
 * The public URL as the server uses it (`https://deckhand.example.com`): an http(s) URL without
 * path, query or fragment, since Deckhand is served at the root of its URL.
 */
function checkPublicUrl(value: string, source: string): string {
  const url = URL.canParse(value) ? new URL(value) : null;
  if (
    url === null ||
    !/^https?:$/.test(url.protocol) ||
    url.pathname !== "/" ||
    url.search !== "" ||
    url.hash !== "" ||
    url.username !== "" ||
    url.password !== ""
  ) {
    throw new ServerError(
      "invalid_config",
      `${source} "${value}" is not the http(s) URL people open the server at; give the scheme, host and port only (Deckhand is served at the root), for example https://deckhand.example.com`,
    );
  }
  return url.origin;
}

/** A comma-separated list from the environment, each entry checked with `schema`. */
function listFromEnvironment(value: string, name: string, schema: z.ZodType<string>): string[] {
  const entries = value
    .split(",")
    .map((entry) => entry.trim())
    .filter((entry) => entry !== "");
  for (const entry of entries) {
    const parsed = schema.safeParse(entry);
    if (!parsed.success) {
      throw new ServerError(
        "invalid_config",
        `${name} entry "${entry}" ${parsed.error.issues[0]?.message ?? "is not valid"}`,
      );
    }
  }
  return entries;
}

/**
 * Which Host names the server answers and which browser origins may act on it (see
 * docs/operations/server.md#browser-access), with refusals that name these settings.
 */
export function serverOriginPolicy(
  config: Pick<ServerConfig, "host" | "publicUrl" | "allowedHosts" | "allowedOrigins">,
): OriginPolicy {
  return new OriginPolicy({
    listenHost: config.host,
    publicUrl: config.publicUrl,
    allowedHosts: config.allowedHosts,
    allowedOrigins: config.allowedOrigins,
    hostAdvice: `add it to allowedHosts in ${CONFIG_FILE_NAME} (or ${ALLOWED_HOSTS_ENV}), or set publicUrl (--public-url) to the URL people open`,
    originAdvice: `add it to allowedOrigins in ${CONFIG_FILE_NAME} (or ${ALLOWED_ORIGINS_ENV})`,
  });
}

export interface ResolveServerConfigOptions {
  environment?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Where `~/.deckhand` lives; the user's home by default. */
  homeDir?: string;
}

/** Reads a variable; an empty one counts as unset, as `VAR= deckhand up` means. */
type ReadEnvironment = (name: string) => string | undefined;

/**
 * Validates flags, environment and `<data-dir>/config.json` (in that order of precedence) into a
 * complete configuration: `--listen` over `DECKHAND_LISTEN` over `listen`, `--data-dir` over
 * `DECKHAND_DATA_DIR` (the file lives in the data directory, so it cannot name one), `--log-level`
 * over `DECKHAND_LOG_LEVEL` over `logLevel`, `--database-url` over `DATABASE_URL` over `databaseUrl`.
 * Every problem is a ServerError naming the setting, raised before anything starts. The parts
 * below run in this order, so with several problems the same one is reported first.
 */
export function resolveServerConfig(
  flags: ServerFlags,
  options: ResolveServerConfigOptions = {},
): ServerConfig {
  const environment = options.environment ?? process.env;
  const cwd = options.cwd ?? process.cwd();
  const input = parseServerFlags(flags);
  const fromEnv: ReadEnvironment = (name) => environment[name] || undefined;
  const dataDir = resolve(
    cwd,
    input.dataDir ?? fromEnv(DATA_DIR_ENV) ?? join(options.homeDir ?? homedir(), ".deckhand"),
  );
  const file = readConfigFile(join(dataDir, CONFIG_FILE_NAME));

  const listen = listenAddress(input, fromEnv, file);
  const publicUrl = publicUrlSetting(input, fromEnv, file);
  const logLevel = logLevelSetting(input, fromEnv, file);
  const databaseUrl = databaseUrlSetting(input, fromEnv, file);
  const access = adminAccess(input, environment, listen.host);
  const upstreams = modelUpstreamSettings(file, environment);
  const codeHosts = codeHostSettings(file);
  const spending = modelSpendingSettings(file);
  return {
    host: listen.host,
    port: listen.port,
    dataDir,
    databaseUrl,
    ...access,
    ...upstreams,
    ...spending,
    ...codeHosts.settings,
    ...agentProcessSettings(file, dataDir, codeHosts.tokenEnv),
    ...executionSettings(input, file),
    maxRequestBodyBytes: file.maxRequestBodyBytes ?? DEFAULT_MAX_BODY_BYTES,
    logLevel,
    webDir: fromEnv(WEB_DIR_ENV) ? resolve(cwd, fromEnv(WEB_DIR_ENV)!) : findWebDir(),
    publicUrl,
    ...browserAccess(fromEnv, file),
  };
}

function parseServerFlags(flags: ServerFlags): ServerFlags {
  const parsed = ServerFlagsSchema.safeParse(flags);
  if (!parsed.success) {
    const problems = describeIssues(
      parsed.error,
      (path) => flagName[String(path[0])] ?? path.join("."),
    );
    throw new ServerError("invalid_config", problems, { cause: parsed.error });
  }
  return parsed.data;
}

/** `--listen` over `DECKHAND_LISTEN` over `listen` over the default, as host and port. */
function listenAddress(
  input: ServerFlags,
  fromEnv: ReadEnvironment,
  file: ServerConfigFile,
): { host: string; port: number } {
  const [listenValue, listenSource] = firstSet([
    [input.listen, "--listen"],
    [fromEnv(LISTEN_ENV), LISTEN_ENV],
    [file.listen, `listen in ${CONFIG_FILE_NAME}`],
    [SERVER_DEFAULT_LISTEN, "the default listen address"],
  ]);
  try {
    return parseListenAddress(listenValue);
  } catch (error) {
    throw new ServerError(
      "invalid_config",
      `${listenSource} "${listenValue}" is not host:port; use for example ${SERVER_DEFAULT_LISTEN}`,
      { cause: error },
    );
  }
}

function publicUrlSetting(
  input: ServerFlags,
  fromEnv: ReadEnvironment,
  file: ServerConfigFile,
): string | null {
  const publicUrlFromEnv = fromEnv(PUBLIC_URL_ENV);
  if (input.publicUrl !== undefined) return checkPublicUrl(input.publicUrl, "--public-url");
  if (publicUrlFromEnv !== undefined) return checkPublicUrl(publicUrlFromEnv, PUBLIC_URL_ENV);
  if (file.publicUrl !== undefined) {
    return checkPublicUrl(file.publicUrl, `publicUrl in ${CONFIG_FILE_NAME}`);
  }
  return null;
}

function logLevelSetting(
  input: ServerFlags,
  fromEnv: ReadEnvironment,
  file: ServerConfigFile,
): ServerLogLevel {
  const envLogLevel = fromEnv(LOG_LEVEL_ENV);
  if (envLogLevel !== undefined && !isLogLevel(envLogLevel)) {
    throw new ServerError(
      "invalid_config",
      `${LOG_LEVEL_ENV} "${envLogLevel}" is not a log level; use one of ${LOG_LEVELS.join(", ")}`,
    );
  }
  return input.logLevel ?? envLogLevel ?? file.logLevel ?? "info";
}

function databaseUrlSetting(
  input: ServerFlags,
  fromEnv: ReadEnvironment,
  file: ServerConfigFile,
): string | null {
  const envUrl = fromEnv(DATABASE_URL_ENV);
  if (input.databaseUrl !== undefined) return checkDatabaseUrl(input.databaseUrl, "--database-url");
  if (envUrl !== undefined) return checkDatabaseUrl(envUrl, DATABASE_URL_ENV);
  if (file.databaseUrl !== undefined) {
    return checkDatabaseUrl(file.databaseUrl, `databaseUrl in ${CONFIG_FILE_NAME}`);
  }
  return null;
}

/** The admin token and whether /api needs one: always beyond loopback. */
function adminAccess(
  input: ServerFlags,
  environment: NodeJS.ProcessEnv,
  host: string,
): Pick<ServerConfig, "adminToken" | "requireAuth" | "resetAdminToken"> {
  const adminToken = environment[ADMIN_TOKEN_ENV] ?? null;
  if (adminToken !== null && adminToken.trim().length < 16) {
    throw new ServerError(
      "invalid_config",
      `${ADMIN_TOKEN_ENV} is set but shorter than 16 characters; use a long random value, for example from "openssl rand -hex 32"`,
    );
  }
  return {
    adminToken: adminToken?.trim() ?? null,
    requireAuth: adminToken !== null || !isLoopbackHost(host),
    resetAdminToken: input.resetAdminToken ?? false,
  };
}

/** Each agent type's model upstream, its key read from the variable the file names. */
function modelUpstreamSettings(
  file: ServerConfigFile,
  environment: NodeJS.ProcessEnv,
): Pick<ServerConfig, "modelUpstreams" | "upstreamModels"> {
  const modelUpstreams: Record<string, UpstreamConfig> = {};
  for (const [agentType, upstream] of Object.entries(file.modelUpstreams ?? {})) {
    const apiKey = environment[upstream.apiKeyEnv];
    if (!apiKey) {
      throw new ServerError(
        "invalid_config",
        `modelUpstreams.${agentType}.apiKeyEnv in ${CONFIG_FILE_NAME} names ${upstream.apiKeyEnv}, which is not set; export it with the provider's API key`,
      );
    }
    modelUpstreams[agentType] = {
      kind: upstream.kind,
      baseUrl: upstream.baseUrl,
      apiKey,
      apiKeyEnv: upstream.apiKeyEnv,
    };
  }
  return {
    modelUpstreams,
    upstreamModels: Object.fromEntries(
      Object.entries(file.modelUpstreams ?? {}).flatMap(([agentType, upstream]) =>
        upstream.models === undefined ? [] : [[agentType, upstream.models]],
      ),
    ),
  };
}

/** Where batch changes find repositories and publish to, and the token variables they use. */
function codeHostSettings(file: ServerConfigFile): {
  settings: Pick<
    ServerConfig,
    "codeHosts" | "codeHostConnections" | "changesetTrackingIntervalMs" | "rolloutWindows"
  >;
  tokenEnv: string[];
} {
  // Code host tokens are for Deckhand's publishing only: no agent inherits them.
  const tokenEnv = [
    ...new Set((file.codeHostConnections ?? []).map((connection) => connection.tokenEnv)),
  ];
  const allowedToken = tokenEnv.find((name) => file.agentEnvironment?.allow?.includes(name));
  if (allowedToken !== undefined) {
    throw new ServerError(
      "invalid_config",
      `agentEnvironment.allow in ${CONFIG_FILE_NAME} names ${allowedToken}, the token of a code host connection; agents never get code host tokens, so remove it`,
    );
  }
  return {
    settings: {
      codeHosts: file.codeHosts ?? [],
      codeHostConnections: file.codeHostConnections ?? [],
      changesetTrackingIntervalMs: (file.changesetTracking?.intervalSeconds ?? 300) * 1_000,
      rolloutWindows: file.batchChanges?.rolloutWindows ?? null,
    },
    tokenEnv,
  };
}

/** Model budgets, prices and the proxy's per-token rate limit. */
function modelSpendingSettings(
  file: ServerConfigFile,
): Pick<ServerConfig, "modelBudgets" | "modelPrices" | "modelProxyRateLimit"> {
  // A cost can only be known with prices: a cost budget without them would never be reached.
  if (file.modelPrices === undefined) {
    const costly = Object.entries(file.modelBudgets ?? {}).find(
      ([, limit]) => limit?.cost !== undefined,
    );
    if (costly !== undefined) {
      throw new ServerError(
        "invalid_config",
        `modelBudgets.${costly[0]}.cost in ${CONFIG_FILE_NAME} needs modelPrices (each model's price per million tokens) to know what requests cost; add modelPrices, or give the budget in tokens`,
      );
    }
  }
  return {
    modelBudgets: file.modelBudgets ?? {},
    modelPrices: file.modelPrices,
    modelProxyRateLimit: file.modelProxyRateLimit ?? null,
  };
}

/** What agent processes inherit and withhold, which models and providers they get. */
function agentProcessSettings(
  file: ServerConfigFile,
  dataDir: string,
  tokenEnv: string[],
): Pick<
  ServerConfig,
  | "withheldEnv"
  | "agentEnvironment"
  | "nativeModel"
  | "nativeModels"
  | "agentStartTimeouts"
  | "providersConfigPath"
> {
  return {
    withheldEnv: [
      ...Object.values(file.modelUpstreams ?? {}).map((upstream) => upstream.apiKeyEnv),
      ...tokenEnv,
    ],
    agentEnvironment: {
      deny: [...(file.agentEnvironment?.deny ?? []), ...tokenEnv],
      allow: file.agentEnvironment?.allow ?? [],
    },
    nativeModel: file.nativeModel ?? null,
    nativeModels: file.nativeModels ?? [],
    agentStartTimeouts: agentStartTimeoutsFrom(file.agentStartTimeouts),
    providersConfigPath: file.providersConfig
      ? resolve(dataDir, file.providersConfig)
      : join(dataDir, PROVIDERS_FILE_NAME),
  };
}

/** Where and how much work runs: concurrency, the sandbox, containers, Kubernetes, agents. */
function executionSettings(
  input: ServerFlags,
  file: ServerConfigFile,
): Pick<
  ServerConfig,
  | "taskConcurrency"
  | "batchConcurrency"
  | "containerRuntime"
  | "kubernetes"
  | "codingAgent"
  | "workspaceAgent"
  | "sandbox"
> {
  return {
    taskConcurrency: file.taskConcurrency ?? 8,
    batchConcurrency: file.batchConcurrency ?? availableParallelism(),
    containerRuntime: { restrictedHost: file.containerRuntime?.restrictedHost },
    kubernetes: file.kubernetes ?? null,
    codingAgent: file.codingAgent ?? {},
    workspaceAgent: input.workspaceAgent ?? file.workspaceAgent ?? true,
    sandbox: sandboxSettings(file.sandbox),
  };
}

/** More Host names and browser origins: the environment's comma-separated lists over the file's. */
function browserAccess(
  fromEnv: ReadEnvironment,
  file: ServerConfigFile,
): Pick<ServerConfig, "allowedHosts" | "allowedOrigins"> {
  const allowedHostsFromEnv = fromEnv(ALLOWED_HOSTS_ENV);
  const allowedOriginsFromEnv = fromEnv(ALLOWED_ORIGINS_ENV);
  return {
    allowedHosts:
      allowedHostsFromEnv !== undefined
        ? listFromEnvironment(allowedHostsFromEnv, ALLOWED_HOSTS_ENV, AllowedHostSchema)
        : (file.allowedHosts ?? []),
    allowedOrigins:
      allowedOriginsFromEnv !== undefined
        ? listFromEnvironment(allowedOriginsFromEnv, ALLOWED_ORIGINS_ENV, AllowedOriginSchema)
        : (file.allowedOrigins ?? []),
  };
}
