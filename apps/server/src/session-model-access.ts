import { type DbModelTokenStore, leaseModelProxy } from "@deckhand/model-proxy";
import type { ModelAccess } from "@deckhand/sessions";

/**
 * Lifetime of a session agent's model token. Turns renew it, so it runs out only for an agent
 * left unused this long; the pool stops idle agents well before that.
 */
const SESSION_MODEL_TOKEN_TTL_MS = 12 * 60 * 60_000;

/**
 * How long after its last renewal a token is renewed again. A turn sooner than that sends no
 * statement for it: the token still has more than its lifetime less this to run (11 hours), far
 * more than any turn or the pool's idle timeout, and the renewal was an update on every turn.
 */
const SESSION_MODEL_TOKEN_RENEW_AFTER_MS = 60 * 60_000;

/**
 * Session agents' access to this server's model proxy: a token per agent backend, bound to the
 * backend's usage job, renewed by the turns that come an hour or more after its last renewal and
 * revoked when the backend goes.
 */
export function sessionModelAccess(options: {
  modelTokens: DbModelTokenStore;
  /** The server's own URL (known once it listens): agents reach the proxy through it. */
  serverUrl: () => string;
  /** Whether the proxy has an upstream for an agent type. */
  serves(agentType: string): boolean;
  /** The clock renewals are timed by (tests move it). */
  now?: () => number;
}): ModelAccess {
  const { modelTokens, serverUrl } = options;
  const now = options.now ?? Date.now;
  return {
    serves: (agentType) => options.serves(agentType),
    async lease(agentType, jobId) {
      // Taken before the token is minted: its lifetime counts from no earlier than this.
      let renewedAt = now();
      const lease = await leaseModelProxy({ modelTokens, serverUrl }, agentType, {
        jobId,
        ttlMs: SESSION_MODEL_TOKEN_TTL_MS,
      });
      return {
        context: lease.context,
        async renew() {
          const at = now();
          if (at - renewedAt < SESSION_MODEL_TOKEN_RENEW_AFTER_MS) return;
          await modelTokens.extend(lease.tokenId, new Date(at + SESSION_MODEL_TOKEN_TTL_MS));
          renewedAt = at;
        },
        release: () => lease.release(),
      };
    },
  };
}
