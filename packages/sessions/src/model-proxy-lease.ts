import { type ModelTokenStore, mintModelToken, revokeModelToken } from "@deckhand/model-proxy";
import type { ModelProxyLease } from "@deckhand/providers";
import { WirePath } from "@deckhand/wire";

export interface ModelProxyLeaseOptions {
  modelTokens: ModelTokenStore;
  /** The server's own URL; a promise while the server does not listen yet. */
  serverUrl: () => string | Promise<string>;
}

/** A lease and the store id of its token, for callers that revoke it themselves later. */
export interface LeasedModelProxy extends ModelProxyLease {
  tokenId: string;
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
  token: { jobId: string; ttlMs: number },
): Promise<LeasedModelProxy> {
  const proxyUrl = `${await options.serverUrl()}${WirePath.modelProvider}/${agentType}`;
  const minted = await mintModelToken(options.modelTokens, token);
  return {
    context: { proxyUrl, token: minted.token, jobId: token.jobId },
    tokenId: minted.tokenId,
    release: async () => {
      await revokeModelToken(options.modelTokens, minted.tokenId);
    },
  };
}
