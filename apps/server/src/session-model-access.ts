import { type DbModelTokenStore, leaseModelProxy } from "@deckhand/model-proxy";
import type { ModelAccess } from "@deckhand/sessions";

/**
 * Lifetime of a session agent's model token. Each turn renews it, so it runs out only for an
 * agent left unused this long; the pool stops idle agents well before that.
 */
const SESSION_MODEL_TOKEN_TTL_MS = 12 * 60 * 60_000;

/**
 * Session agents' access to this server's model proxy: a token per agent backend, bound to the
 * backend's usage job, renewed each turn and revoked when the backend goes.
 */
export function sessionModelAccess(options: {
  modelTokens: DbModelTokenStore;
  /** The server's own URL (known once it listens): agents reach the proxy through it. */
  serverUrl: () => string;
  /** Whether the proxy has an upstream for an agent type. */
  serves(agentType: string): boolean;
}): ModelAccess {
  const { modelTokens, serverUrl } = options;
  return {
    serves: (agentType) => options.serves(agentType),
    async lease(agentType, jobId) {
      const lease = await leaseModelProxy({ modelTokens, serverUrl }, agentType, {
        jobId,
        ttlMs: SESSION_MODEL_TOKEN_TTL_MS,
      });
      return {
        context: lease.context,
        async renew() {
          await modelTokens.extend(
            lease.tokenId,
            new Date(Date.now() + SESSION_MODEL_TOKEN_TTL_MS),
          );
        },
        release: () => lease.release(),
      };
    },
  };
}
