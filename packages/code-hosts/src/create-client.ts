import { BitbucketCloudClient } from "./bitbucket-client.ts";
import type { CodeHostClient } from "./code-host-client.ts";
import { type CodeHostConnection, connectionName } from "./connection.ts";
import { GiteaClient } from "./gitea-client.ts";
import { GitHubClient } from "./github-client.ts";
import { GitLabClient } from "./gitlab-client.ts";
import { createHostFetch, type FetchFunction } from "./host-fetch.ts";
import { RequestPolicy, type RequestPolicyOptions } from "./request-policy.ts";

export interface CodeHostClientOptions {
  /**
   * The connection's rate limiter and retry policy. Clients that share a token should share
   * one, since hosts count per token; by default each client gets its own, at the connection's
   * `publishRate`.
   */
  policy?: RequestPolicy;
  /** Options for the policy made when none is given (clock, attempts, onWait, signal). */
  policyOptions?: Omit<RequestPolicyOptions, "name" | "publishRate">;
  /** Where the token is read from, at each request; process.env by default. */
  environment?: Readonly<Record<string, string | undefined>>;
  /** The fetch that sends; the global one by default. */
  fetch?: FetchFunction;
}

/** The policy a connection gets by default: named after it, at its publication rate. */
export function connectionPolicy(
  connection: CodeHostConnection,
  options: Omit<RequestPolicyOptions, "name" | "publishRate"> = {},
): RequestPolicy {
  return new RequestPolicy({
    ...options,
    name: connectionName(connection),
    ...(connection.publishRate === undefined ? {} : { publishRate: connection.publishRate }),
  });
}

/** The client for a connection's type, every request of it through the connection's policy. */
export function createCodeHostClient(
  connection: CodeHostConnection,
  options: CodeHostClientOptions = {},
): CodeHostClient {
  const policy = options.policy ?? connectionPolicy(connection, options.policyOptions);
  const fetch = createHostFetch({
    connection,
    policy,
    ...(options.environment === undefined ? {} : { environment: options.environment }),
    ...(options.fetch === undefined ? {} : { fetch: options.fetch }),
  });
  switch (connection.type) {
    case "github":
      return new GitHubClient(connection, fetch);
    case "gitlab":
      return new GitLabClient(connection, fetch);
    case "gitea":
      return new GiteaClient(connection, fetch);
    case "bitbucket-cloud":
      return new BitbucketCloudClient(connection, fetch);
  }
}
