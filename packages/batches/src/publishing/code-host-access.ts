// How the batch engine reaches code hosts: which connection a repository's clone URL belongs to,
// git's environment carrying that connection's token, and one client (with one request policy,
// so one pace and one rate-limit pause) per connection and publication rate.
import {
  type CodeHostClient,
  type CodeHostConnection,
  connectionName,
  createCodeHostClient,
  gitAuthEnvironment,
  type RepositoryOnHost,
  RequestPolicy,
  type RequestPolicyOptions,
  resolveRepository,
} from "@deckhand/code-hosts";
import type { GitEnvironmentFor } from "../code-host-credentials.ts";

export interface CodeHostAccessOptions {
  /** The configured connections (config.json's `codeHostConnections`), read at each use. */
  connections: () => readonly CodeHostConnection[];
  /** Where tokens are read from; process.env by default. */
  environment?: Readonly<Record<string, string | undefined>>;
  /** Retry and wait settings for every client (tests shorten them). */
  policyOptions?: Omit<RequestPolicyOptions, "name" | "publishRate">;
}

export class CodeHostAccess {
  readonly #options: CodeHostAccessOptions;
  readonly #clients = new Map<string, CodeHostClient>();

  constructor(options: CodeHostAccessOptions) {
    this.#options = options;
  }

  /** The connection and repository path of a clone URL; undefined when no connection matches. */
  resolve(url: string | null | undefined): RepositoryOnHost | undefined {
    if (url === null || url === undefined) return undefined;
    return resolveRepository(this.#options.connections(), url);
  }

  /**
   * Git's environment for a URL of a connection: its token as an extra header for that URL only.
   * Undefined for URLs no connection matches (their own credentials, or none, apply).
   */
  readonly gitEnvironment: GitEnvironmentFor = (url) => {
    const found = this.resolve(url);
    if (found === undefined) return undefined;
    return gitAuthEnvironment(found.connection, url, this.#options.environment);
  };

  /**
   * The client of a connection. One per connection and rate, shared by every caller in this
   * process, so the publication rate and a host's "wait" hold across runs and the tracking task.
   */
  client(connection: CodeHostConnection, perMinute?: number): CodeHostClient {
    const name = connectionName(connection);
    const rate = perMinute ?? connection.publishRate?.perMinute;
    const key = `${name}\u0000${connection.url}\u0000${rate ?? "default"}`;
    let client = this.#clients.get(key);
    if (client === undefined) {
      const policy = new RequestPolicy({
        ...this.#options.policyOptions,
        name,
        ...(rate !== undefined ? { publishRate: { perMinute: rate } } : {}),
      });
      client = createCodeHostClient(connection, {
        policy,
        ...(this.#options.environment ? { environment: this.#options.environment } : {}),
      });
      this.#clients.set(key, client);
    }
    return client;
  }

  /** Every configured connection's token variable: what agents must never inherit. */
  tokenVariables(): string[] {
    return [...new Set(this.#options.connections().map((connection) => connection.tokenEnv))];
  }
}
