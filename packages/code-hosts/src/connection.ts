// Code host connections: where pull requests are published and with which token. The server
// reads a list of them from `<data-dir>/config.json`; the token itself is never in the file,
// only the name of the environment variable that holds it.
import type { CodeHostConnectionView } from "@deckhand/wire";
import { z } from "zod";
import { CodeHostError } from "./code-host-error.ts";

export const CODE_HOST_TYPES = ["github", "gitlab", "bitbucket-cloud", "gitea"] as const;
export type CodeHostType = (typeof CODE_HOST_TYPES)[number];

/**
 * The default publication rate: mutating requests (create, update, comment, close, merge) per
 * minute and connection. GitHub documents a secondary limit of 80 content-creating requests a
 * minute and asks for at least a second between them; half of that leaves room for people and
 * other tools using the same token. Reads are not paced (they only wait out a host's limit).
 */
export const DEFAULT_PUBLISH_RATE = { perMinute: 30 } as const;

const httpUrl = z
  .string()
  .min(1)
  .refine((value) => {
    try {
      const url = new URL(value);
      return (url.protocol === "https:" || url.protocol === "http:") && url.username === "";
    } catch {
      return false;
    }
  }, "must be an http(s) URL without credentials, such as https://github.com");

const environmentName = z
  .string()
  .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "must be an environment variable name, such as GITHUB_TOKEN");

const PublishRateSchema = z
  .strictObject({
    perMinute: z.number().positive().max(6_000).meta({
      description:
        "Mutating requests (create, update, comment, close, merge, delete) per minute; they are spaced evenly.",
    }),
  })
  .meta({ description: "How fast changes are published to this host." });

function connectionSchema<const Type extends CodeHostType>(type: Type, description: string) {
  return z
    .strictObject({
      type: z.literal(type),
      url: httpUrl.meta({
        description:
          "The host's web address, e.g. https://github.com or https://ghe.example.com; clone URLs under it belong to this connection.",
      }),
      apiUrl: httpUrl.optional().meta({
        description: "The API base; by default derived from `url` for the host's type.",
      }),
      tokenEnv: environmentName.meta({
        description:
          "The environment variable holding the token; read at each request, never stored or logged.",
      }),
      name: z.string().min(1).optional().meta({
        description: "The connection's name in messages; by default the host of `url`.",
      }),
      publishRate: PublishRateSchema.optional(),
      gitUser: z.string().min(1).optional().meta({
        description:
          "The user name sent with the token when pushing over https; a per-type default otherwise.",
      }),
      authUser: z.string().min(1).optional().meta({
        description:
          "Bitbucket Cloud: the user (Atlassian e-mail for API tokens, username for app passwords) for HTTP Basic API authentication; without it the token is sent as a Bearer access token.",
      }),
    })
    .meta({ description });
}

export const GitHubConnectionSchema = connectionSchema(
  "github",
  "GitHub.com or GitHub Enterprise Server.",
);
export const GitLabConnectionSchema = connectionSchema(
  "gitlab",
  "GitLab.com or a self-managed GitLab.",
);
export const BitbucketCloudConnectionSchema = connectionSchema(
  "bitbucket-cloud",
  "Bitbucket Cloud (bitbucket.org).",
);
export const GiteaConnectionSchema = connectionSchema("gitea", "Gitea or Forgejo.");

export const CodeHostConnectionSchema = z
  .discriminatedUnion("type", [
    GitHubConnectionSchema,
    GitLabConnectionSchema,
    BitbucketCloudConnectionSchema,
    GiteaConnectionSchema,
  ])
  .meta({ description: "A code host that changesets are published to as pull requests." });

export const CodeHostConnectionsSchema = z
  .array(CodeHostConnectionSchema)
  .superRefine((connections, context) => {
    const seen = new Set<string>();
    connections.forEach((connection, index) => {
      const name = connectionName(connection);
      if (seen.has(name)) {
        context.addIssue({
          code: "custom",
          path: [index, "name"],
          message: `two connections are named ${name}; give one a distinct \`name\``,
        });
      }
      seen.add(name);
    });
  })
  .meta({ description: "The code hosts batch changes publish to." });

export type CodeHostConnection = z.infer<typeof CodeHostConnectionSchema>;

/** The connection's name: its `name`, else its web URL's host and path (`github.com`). */
export function connectionName(connection: CodeHostConnection): string {
  if (connection.name !== undefined) return connection.name;
  const url = new URL(connection.url);
  return `${url.host}${trimSlashes(url.pathname) === "" ? "" : `/${trimSlashes(url.pathname)}`}`;
}

function trimSlashes(path: string): string {
  return path.replace(/^\/+|\/+$/g, "");
}

/** The web base without a trailing slash: `https://ghe.example.com/prefix`. */
export function webBase(connection: CodeHostConnection): string {
  return connection.url.replace(/\/+$/, "");
}

/**
 * The API base of a connection: `apiUrl` when given, else the documented one for its type —
 * api.github.com for github.com and `<url>/api/v3` for GitHub Enterprise, `<url>/api/v4` for
 * GitLab, `<url>/api/v1` for Gitea and Forgejo, api.bitbucket.org/2.0 for Bitbucket Cloud.
 */
export function apiBase(connection: CodeHostConnection): string {
  if (connection.apiUrl !== undefined) return connection.apiUrl.replace(/\/+$/, "");
  const web = webBase(connection);
  const host = new URL(web).hostname.toLowerCase();
  switch (connection.type) {
    case "github":
      return host === "github.com" ? "https://api.github.com" : `${web}/api/v3`;
    case "gitlab":
      return `${web}/api/v4`;
    case "gitea":
      return `${web}/api/v1`;
    case "bitbucket-cloud":
      // Bitbucket Cloud is one service: its API does not live under the web address.
      return "https://api.bitbucket.org/2.0";
  }
}

/**
 * The user name git sends with the token over https. Each host ignores it or wants this one:
 * GitHub takes any name with a token (`x-access-token` is what its apps use), GitLab `oauth2`,
 * Bitbucket Cloud access tokens `x-token-auth`; Gitea and Forgejo find the user by the token.
 * `gitUser` overrides it (a Bitbucket API token or app password needs it).
 */
export function gitUserOf(connection: CodeHostConnection): string {
  if (connection.gitUser !== undefined) return connection.gitUser;
  switch (connection.type) {
    case "github":
      return "x-access-token";
    case "gitlab":
      return "oauth2";
    case "bitbucket-cloud":
      // Access tokens; API tokens want `x-bitbucket-api-token-auth`, app passwords the username.
      return "x-token-auth";
    case "gitea":
      return "deckhand";
  }
}

/**
 * What the settings screen shows of a connection: everything but the token, which is only named
 * by its variable, with whether that variable is set now (tokens are read at each request).
 */
export function describeConnection(
  connection: CodeHostConnection,
  environment: Readonly<Record<string, string | undefined>> = process.env,
): CodeHostConnectionView {
  const token = environment[connection.tokenEnv];
  return {
    name: connectionName(connection),
    type: connection.type,
    url: webBase(connection),
    api_url: apiBase(connection),
    token_env: connection.tokenEnv,
    token_set: token !== undefined && token.trim() !== "",
    publish_rate_per_minute: connection.publishRate?.perMinute ?? DEFAULT_PUBLISH_RATE.perMinute,
  };
}

/** Parses one connection, throwing a CodeHostError that names every problem. */
export function parseCodeHostConnection(value: unknown): CodeHostConnection {
  const parsed = CodeHostConnectionSchema.safeParse(value);
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues
    .map((issue) => `${issue.path.join(".") || "(connection)"}: ${issue.message}`)
    .join("; ");
  throw new CodeHostError(
    "invalid_connection",
    `invalid code host connection: ${problems}`,
    {},
    {
      cause: parsed.error,
    },
  );
}
