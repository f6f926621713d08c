/**
 * Names that cross a process boundary. Every other package imports these; the parity test in
 * this package fails when one of their values is spelled out as a string literal elsewhere.
 */

/** Environment variables Deckhand passes into agent processes or reads itself. */
export const WireEnv = {
  /** Short-lived, scoped token for the model-provider proxy. The secret that travels furthest. */
  modelProviderToken: "DECKHAND_MODEL_PROVIDER_TOKEN",
  /** Base URL of the model-provider proxy, without the agent-type suffix. */
  modelProviderUrl: "DECKHAND_MODEL_PROVIDER_URL",
  /** The batch job (or session turn) a process works for. */
  jobId: "DECKHAND_JOB_ID",
  /** The chat a process was started for; injected by the workspace agent. */
  chatId: "DECKHAND_CHAT_ID",
  /** The workspace agent's own bearer token. */
  agentToken: "DECKHAND_AGENT_TOKEN",
  /**
   * An executor token: what `deckhand executor --server-url` presents to the server's executor
   * API. It reaches the executor routes only, and no step may see it.
   */
  executorToken: "DECKHAND_EXECUTOR_TOKEN",
  /** The server's admin bearer token; required when it listens beyond loopback. */
  adminToken: "DECKHAND_ADMIN_TOKEN",
  /** The server's listen address (`host:port`) when `--listen` is not given. */
  serverListen: "DECKHAND_LISTEN",
  /** The server's data directory when `--data-dir` is not given. */
  serverDataDir: "DECKHAND_DATA_DIR",
  /** The server's log level when `--log-level` is not given. */
  serverLogLevel: "DECKHAND_LOG_LEVEL",
  /** The URL people open the server at, when `--public-url` is not given (behind a proxy, say). */
  serverPublicUrl: "DECKHAND_PUBLIC_URL",
  /** More Host names the server answers to, comma-separated, over `allowedHosts` in config.json. */
  serverAllowedHosts: "DECKHAND_ALLOWED_HOSTS",
  /** More origins whose pages may act on the server, comma-separated, over `allowedOrigins`. */
  serverAllowedOrigins: "DECKHAND_ALLOWED_ORIGINS",
  /** More Host names the workspace agent answers to, comma-separated, when `--allowed-hosts` is not given. */
  agentAllowedHosts: "DECKHAND_AGENT_ALLOWED_HOSTS",
} as const;

/** HTTP headers. */
export const WireHeader = {
  /** Sent to the model-provider proxy; must match the job the token was minted for. */
  jobId: "Deckhand-Job-Id",
  /** Scopes workspace-agent process requests to one chat. A UUID. */
  chatId: "Deckhand-Chat-Id",
  /** JSON array of UUIDs: chats whose processes a sub-agent chat may also see. */
  ancestorChatIds: "Deckhand-Ancestor-Chat-Ids",
  authorization: "Authorization",
} as const;

/** URL paths. Workspace-agent routes live under `agentApi`, server routes under `serverApi`. */
export const WirePath = {
  agentApi: "/api/v0",
  processes: "/api/v0/processes",
  files: "/api/v0/files",
  gitWatch: "/api/v0/git/watch",
  agentHealth: "/api/v0/health",
  serverApi: "/api",
  /** The executor API: the only routes an executor token reaches. */
  executorApi: "/api/executor",
  modelProvider: "/model-provider",
} as const;

/**
 * WebSocket subprotocols of the session stream and the agent's git watch. Browsers cannot set
 * headers on a WebSocket, so they offer the stream's protocol plus `bearerPrefix` + token; the
 * server (or agent) answers with the stream's protocol, never with the one carrying the token.
 */
export const WireSubprotocol = {
  sessionStream: "deckhand.session-stream.v1",
  batchRunStream: "deckhand.batch-run-stream.v1",
  sessionActivity: "deckhand.session-activity.v1",
  gitWatch: "deckhand.git-watch.v1",
  bearerPrefix: "bearer.",
} as const;

/**
 * What the web UI's build writes where each answer of index.html gets its own CSP nonce: Vite's
 * `html.cspNonce` puts it on the page's tags and in `<meta property="csp-nonce">`, and the server
 * replaces it with a fresh random nonce named in that answer's Content-Security-Policy.
 */
export const WEB_CSP_NONCE_PLACEHOLDER = "__DECKHAND_CSP_NONCE__";

/** Where the workspace agent listens unless told otherwise. */
export const AGENT_DEFAULT_LISTEN = "127.0.0.1:7421";

/** Process API limits shared by the agent (which enforces them) and clients (which respect them). */
export const ProcessLimits = {
  /** Default number of processes `GET /list` returns, to keep an LLM's context small. */
  defaultListLimit: 10,
  /** Largest `?limit=` a list request may ask for. */
  maxListLimit: 100,
  /** How long `?wait=true` may block, whatever the client asks. */
  waitCapMs: 5 * 60 * 1000,
} as const;
