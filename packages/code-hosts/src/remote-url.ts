// Which connection a repository's clone or origin URL belongs to, and the repository's path on
// that host. @deckhand/batches' `repositoryNameFromUrl` names a repository `host/path` for
// matching `on:` entries; this needs the parts it folds together (scheme, port, the path below a
// connection's web prefix), so it parses the URL itself.
import { type CodeHostConnection, webBase } from "./connection.ts";

/** A remote URL taken apart; `path` has no leading or trailing slash and no `.git`. */
export interface RemoteUrlParts {
  /** `https`, `http`, `ssh`, `git`; scp-like `git@host:path` addresses are `ssh`. */
  scheme: string;
  /** Lower case, without user or port. */
  hostname: string;
  /** The port as written; undefined when the URL gives none. */
  port: string | undefined;
  path: string;
}

const scpLike = /^(?:[^@/]+@)?([^:/]+):(?!\/\/)(.+)$/;
const withScheme = /^([a-z][a-z0-9+.-]*):\/\//i;

function cleanPath(path: string): string {
  return path
    .replace(/\/+$/, "")
    .replace(/\.git$/, "")
    .replace(/^\/+/, "")
    .replace(/\/{2,}/g, "/");
}

/** Takes a remote URL apart: `https://`, `http://`, `ssh://`, `git://` or `git@host:path`. */
export function parseRemoteUrl(url: string): RemoteUrlParts | undefined {
  const text = url.trim();
  const scheme = withScheme.exec(text)?.[1]?.toLowerCase();
  if (scheme !== undefined) {
    let parsed: URL;
    try {
      parsed = new URL(text);
    } catch {
      return undefined;
    }
    if (parsed.hostname === "") return undefined;
    const normalised = scheme === "git+ssh" || scheme === "ssh+git" ? "ssh" : scheme;
    return {
      scheme: normalised,
      hostname: parsed.hostname.toLowerCase(),
      port: parsed.port === "" ? undefined : parsed.port,
      path: cleanPath(decodeURIComponent(parsed.pathname)),
    };
  }
  const scp = scpLike.exec(text);
  if (scp) {
    return {
      scheme: "ssh",
      hostname: scp[1]!.toLowerCase(),
      port: undefined,
      path: cleanPath(scp[2]!),
    };
  }
  return undefined;
}

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
  const web = new URL(webBase(connection));
  if (web.hostname.toLowerCase() !== remote.hostname) return undefined;
  const prefix = cleanPath(web.pathname);
  let path = remote.path;
  let score = 1;
  const isWeb = remote.scheme === "https" || remote.scheme === "http";
  if (isWeb) {
    // Over http(s) the clone URL is under the web address: same port, same path prefix.
    const remotePort = remote.port ?? defaultPort(`${remote.scheme}:`);
    const webPort = web.port === "" ? defaultPort(web.protocol) : web.port;
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
