// Lending a job access to the model-provider proxy: a scoped token minted for the job, the URL
// the proxy answers at, and a release that revokes the token. Sessions, provider probes and batch
// workspace runs all lease through here, so every agent Deckhand starts gets its access alike.
import { WirePath } from "@deckhand/wire";
import { type ModelTokenStore, mintModelToken, revokeModelToken } from "./model-token.ts";

export interface ModelProxyLeaseOptions {
  modelTokens: ModelTokenStore;
  /** The server's own URL; a promise while the server does not listen yet. */
  serverUrl: () => string | Promise<string>;
}

/** What a lease's token is minted for. */
export interface ModelProxyLeaseToken {
  /** The job (a batch workspace run, a session's agent, a probe) the token is bound to. */
  jobId: string;
  ttlMs: number;
}

/**
 * Proxy access for one job. The token is bound to the job id, not to an agent type: one lease
 * serves every agent type the job runs, each at `<baseUrl>/<agent-type>`.
 */
export interface ModelProviderLease {
  /** `<server>/model-provider`, without an agent type. */
  baseUrl: string;
  /** The secret: hand it to the agent's environment and nowhere else. */
  token: string;
  /** The store's id for the token, to revoke it without the secret. */
  tokenId: string;
  jobId: string;
  expiresAt: Date;
  /** Revokes the token. Calling it again does no harm. */
  release(): Promise<void>;
}

/** A lease pointed at one agent type's route, as sessions and provider probes launch agents. */
export interface LeasedModelProxy {
  context: {
    /** `<server>/model-provider/<agent-type>`: the proxy route for this agent type. */
    proxyUrl: string;
    token: string;
    jobId: string;
  };
  tokenId: string;
  release(): Promise<void>;
}

/** Mints a token for `token.jobId` and returns it with the proxy's base URL and its release. */
export async function leaseModelProvider(
  options: ModelProxyLeaseOptions,
  token: ModelProxyLeaseToken,
): Promise<ModelProviderLease> {
  const baseUrl = `${await options.serverUrl()}${WirePath.modelProvider}`;
  const minted = await mintModelToken(options.modelTokens, token);
  return {
    baseUrl,
    token: minted.token,
    tokenId: minted.tokenId,
    jobId: token.jobId,
    expiresAt: minted.expiresAt,
    release: async () => {
      await revokeModelToken(options.modelTokens, minted.tokenId);
    },
  };
}

/**
 * A batch job's model token: revoked when the job ends; the TTL only bounds a token whose job
 * died with its executor. Longer than the default workspace timeout.
 */
export const BATCH_JOB_MODEL_TOKEN_TTL_MS = 2 * 60 * 60_000;

/**
 * Model-proxy access for batch jobs, one lease per job id. The server's own batch worker and
 * `deckhand executor` processes on the same database both lend it to codingAgent steps: the
 * tokens go to the shared store, and the server's proxy verifies them.
 */
export function batchJobModelProviderAccess(options: ModelProxyLeaseOptions): {
  lease(jobId: string): Promise<ModelProviderLease>;
} {
  return {
    lease: (jobId) => leaseModelProvider(options, { jobId, ttlMs: BATCH_JOB_MODEL_TOKEN_TTL_MS }),
  };
}

/**
 * Gives an agent access to the model proxy for its agent type: the route
 * `<server>/model-provider/<agent-type>` and a scoped token minted for `jobId`. Sessions and
 * provider probes both launch agents with what this returns, so a probe sees what a session
 * will; `release` revokes the token.
 */
export async function leaseModelProxy(
  options: ModelProxyLeaseOptions,
  agentType: string,
  token: ModelProxyLeaseToken,
): Promise<LeasedModelProxy> {
  const lease = await leaseModelProvider(options, token);
  return {
    context: { proxyUrl: `${lease.baseUrl}/${agentType}`, token: lease.token, jobId: lease.jobId },
    tokenId: lease.tokenId,
    release: lease.release,
  };
}
