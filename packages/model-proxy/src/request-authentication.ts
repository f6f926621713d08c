import { WireEnv, WireHeader } from "@deckhand/wire";
import type { Context } from "hono";
import type { LogFields, ModelProxyLogger } from "./logger.ts";
import { ModelProxyError } from "./model-proxy-error.ts";
import { type ModelTokenRecord, type ModelTokenStore, verifyModelToken } from "./model-token.ts";

/** What a request carries through the proxy: whatever it presented as a credential. */
export type ProxyEnvironment = { Variables: { secrets: string[] } };
export type ProxyContext = Context<ProxyEnvironment>;

/**
 * One agent request as the proxy reads it, whether hono's app or the Node handler ahead of it
 * received it.
 */
export interface ProxyExchange {
  method: string;
  /** The request's URL, parsed once: authentication reads its query, routing its path. */
  url: URL;
  headers: Headers;
  /** The whole body, held to the body limit. */
  body(): Promise<Uint8Array>;
  /** Aborts when the agent goes away. */
  signal: AbortSignal;
  /** Whatever the request presented as a credential: never forwarded back or logged. */
  secrets: string[];
}

const UNAUTHORIZED_MESSAGE = `missing or invalid model-provider token; send the token from ${WireEnv.modelProviderToken} as "${WireHeader.authorization}: Bearer <token>", "x-api-key: <token>" or "x-goog-api-key: <token>", with ${WireHeader.jobId} set to the job it was minted for`;

/**
 * The token an agent presented, in the form its provider's SDK sends an API key: OpenAI SDKs a
 * bearer token, Anthropic SDKs `x-api-key`, Google's `x-goog-api-key` or the `key` query
 * parameter. An SDK may send the same key in two of these; that is one credential.
 */
function presentedCredentials(
  headers: Headers,
  search: URLSearchParams,
): { token: string | undefined; raw: string[] } {
  const authorization = headers.get(WireHeader.authorization);
  const apiKey = headers.get("x-api-key");
  const googleKey = headers.get("x-goog-api-key");
  const queryKey = search.get("key");
  const raw = [authorization, apiKey, googleKey, queryKey].filter(
    (value): value is string => !!value,
  );
  const bearer = authorization?.match(/^Bearer\s+(\S+)\s*$/i)?.[1];
  const candidates = [bearer, apiKey?.trim(), googleKey?.trim(), queryKey?.trim()].filter(
    (value): value is string => !!value,
  );
  // Two different credentials at once is ambiguous; refuse rather than pick one.
  if (new Set(candidates).size !== 1) return { token: undefined, raw };
  return { token: candidates[0], raw };
}

/** A request whose scoped token the store knows, for the job it names. */
export interface AuthenticatedRequest {
  token: string;
  record: ModelTokenRecord;
}

/**
 * Checks the scoped token a request presents and the job id it names; any refusal is one
 * generic 401 for the agent, and its reason goes to the log.
 */
export class RequestAuthentication {
  readonly #tokens: ModelTokenStore;
  readonly #now: () => number;

  constructor(tokens: ModelTokenStore, now: () => number) {
    this.#tokens = tokens;
    this.#now = now;
  }

  /**
   * The request's token and its record. Whatever the request presented as a credential is one
   * of its secrets from here on (`exchange.secrets`), even if malformed.
   */
  async authenticate(
    exchange: ProxyExchange,
    agentType: string,
    logger: ModelProxyLogger,
  ): Promise<AuthenticatedRequest> {
    const { token, raw } = presentedCredentials(exchange.headers, exchange.url.searchParams);
    exchange.secrets = raw;
    const refuse = (reason: string, fields: LogFields = {}): never => {
      logger.warn("model-provider request refused", { agentType, reason, ...fields });
      throw new ModelProxyError("unauthorized", UNAUTHORIZED_MESSAGE);
    };
    if (token === undefined) return refuse("no_token");
    exchange.secrets = [...raw, token];
    const verification = await verifyModelToken(
      this.#tokens,
      token,
      exchange.headers.get(WireHeader.jobId) ?? undefined,
      this.#now(),
    );
    if (!verification.ok) {
      return refuse(verification.reason, { tokenId: verification.record?.id });
    }
    return { token, record: verification.record };
  }
}
