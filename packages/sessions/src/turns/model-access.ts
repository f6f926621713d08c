import type { ModelProxyContext } from "@deckhand/providers";

/**
 * How a session's agents reach model providers without holding their keys: the model-provider
 * proxy, which the application supplies (the server implements this over its token store). The
 * session domain only asks for access per agent session and keeps it alive while the agent is in
 * use; minting, verifying and revoking tokens is the proxy's business.
 */
export interface ModelAccess {
  /**
   * Whether agents of this type are pointed at the proxy (it has an upstream for the type). An
   * agent whose type it does not serve keeps its own login and credentials.
   */
  serves(agentType: string): boolean;
  /** Proxy access for one agent backend, bound to the job its model usage is recorded under. */
  lease(agentType: string, jobId: string): Promise<ModelAccessLease>;
}

/** Proxy access lent to one agent backend, for as long as the backend lives. */
export interface ModelAccessLease {
  /** What the agent is started with: the proxy route for its type, its token and job id. */
  context: ModelProxyContext;
  /** Keeps the access alive for another lifetime: each turn renews it. */
  renew(): Promise<void>;
  /** Ends the access (the token stops working): the backend is gone. */
  release(): Promise<void>;
}
