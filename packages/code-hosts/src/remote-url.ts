// Which connection a repository's clone or origin URL belongs to, and the repository's path on
// that host: the URL's parts (from @deckhand/git) matched against each connection's web address.
import { parseRemoteUrl, type RemoteUrlParts } from "@deckhand/git";
import { type CodeHostConnection, webBase } from "./connection.ts";

/** A repository on a connection: `owner/name`, or `group/subgroup/name` on GitLab. */
export interface RepositoryOnHost {
  connection: CodeHostConnection;
  repository: string;
}

/** How many path segments a repository has on each type of host; GitLab nests groups. */
function validRepositoryPath(connection: CodeHostConnection, path: string): boolean {
  const segments = path.split("/");
  if (segments.some((segment) => segment === "" || segment === "." || segment === "..")) {
    return false;
  }
  return connection.type === "gitlab" ? segments.length >= 2 : segments.length === 2;
}

function defaultPort(protocol: string): string {
  return protocol === "https:" ? "443" : protocol === "http:" ? "80" : "";
}

interface Candidate {
  match: RepositoryOnHost;
  /** Higher is a closer match: same port and scheme beat the same host name alone. */
  score: number;
}

function matchOne(connection: CodeHostConnection, remote: RemoteUrlParts): Candidate | undefined {
  const web = parseRemoteUrl(webBase(connection));
  if (web === undefined || web.hostname !== remote.hostname) return undefined;
  const prefix = web.path;
  let path = remote.path;
  let score = 1;
  const isWeb = remote.scheme === "https" || remote.scheme === "http";
  if (isWeb) {
    // Over http(s) the clone URL is under the web address: same port, same path prefix.
    const remotePort = remote.port ?? defaultPort(`${remote.scheme}:`);
    const webPort = web.port ?? defaultPort(`${web.scheme}:`);
    if (remotePort !== webPort) return undefined;
    if (prefix !== "") {
      if (!path.startsWith(`${prefix}/`)) return undefined;
      path = path.slice(prefix.length + 1);
    }
    score = 3;
  } else if (prefix !== "" && path.startsWith(`${prefix}/`)) {
    // An ssh path is relative to the host's root, so a web prefix is usually absent; when it is
    // there (some installations mirror it), it is not part of the repository's path.
    path = path.slice(prefix.length + 1);
    score = 2;
  }
  if (!validRepositoryPath(connection, path)) return undefined;
  return { match: { connection, repository: path }, score: score * 1_000 + prefix.length };
}

/**
 * The connection a clone or origin URL belongs to and the repository's path on it, or
 * undefined when no connection's host serves it. An http(s) URL must match a connection's host,
 * port and path prefix; an ssh or scp-like URL (`git@github.com:acme/api.git`) matches by host
 * name, since ssh runs on another port. When several connections match, the most specific wins.
 */
export function resolveRepository(
  connections: readonly CodeHostConnection[],
  url: string,
): RepositoryOnHost | undefined {
  const remote = parseRemoteUrl(url);
  if (remote === undefined) return undefined;
  let best: Candidate | undefined;
  for (const connection of connections) {
    const candidate = matchOne(connection, remote);
    if (candidate !== undefined && (best === undefined || candidate.score > best.score)) {
      best = candidate;
    }
  }
  return best?.match;
}

/** The https clone URL of a repository on a connection (what pushes use), without credentials. */
export function cloneUrl(connection: CodeHostConnection, repository: string): string {
  const web = webBase(connection);
  return `${web}/${repository}.git`;
}
