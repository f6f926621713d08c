// Remote URLs, parsed once for every package: batch specs name a repository `host/path`
// (`github.com/acme/api`) however its URL is spelled, and code host connections need the parts
// (scheme, port, path) to tell which host serves it. git accepts more spellings than `new URL`
// (scp-like `git@host:path`, plain paths), so the spellings git documents in git-clone(1)'s
// "GIT URLS" are handled here.

/** A remote URL taken apart; `path` has no leading or trailing slash and no `.git`. */
export interface RemoteUrlParts {
  /** `https`, `http`, `ssh`, `git`, `file`; scp-like `git@host:path` addresses are `ssh`. */
  scheme: string;
  /** Lower case, without user or port; empty for `file://` URLs and plain paths. */
  hostname: string;
  /** The port as written; undefined when the URL gives none. */
  port: string | undefined;
  path: string;
}

/** `git@host:path`: no scheme, a colon before the first slash. */
const scpLike = /^(?:[^@/]+@)?([^:/]+):(?!\/\/)(.*)$/;
const withScheme = /^([a-z][a-z0-9+.-]*):\/\//i;

function cleanPath(path: string): string {
  return path
    .replace(/\/+$/, "")
    .replace(/\.git$/, "")
    .replace(/^\/+/, "")
    .replace(/\/{2,}/g, "/");
}

/**
 * Takes a remote URL apart: `https://`, `http://`, `ssh://`, `git://`, `file://`, `git@host:path`
 * or an absolute path. Undefined for text that is no remote URL at all.
 */
export function parseRemoteUrl(url: string): RemoteUrlParts | undefined {
  const text = url.trim();
  if (text === "") return undefined;
  const scheme = withScheme.exec(text)?.[1]?.toLowerCase();
  if (scheme !== undefined) {
    let parsed: URL;
    try {
      parsed = new URL(text);
    } catch {
      return undefined;
    }
    const normalised = scheme === "git+ssh" || scheme === "ssh+git" ? "ssh" : scheme;
    return {
      scheme: normalised,
      hostname: parsed.hostname.toLowerCase(),
      port: parsed.port === "" ? undefined : parsed.port,
      path: cleanPath(decodeURIComponent(parsed.pathname)),
    };
  }
  if (text.startsWith("/")) {
    return { scheme: "file", hostname: "", port: undefined, path: cleanPath(text) };
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

/**
 * The repository name a remote URL stands for, as batch specs write it: the host (lower case,
 * without user or port) and the path, without `.git`. A `file://` URL or a plain path has no
 * host, so its name is the path without the leading slash. Undefined for text that is no URL.
 */
export function repositoryNameFromUrl(url: string): string | undefined {
  const parts = parseRemoteUrl(url);
  if (parts === undefined) return undefined;
  const name =
    parts.hostname === ""
      ? parts.path
      : parts.path === ""
        ? parts.hostname
        : `${parts.hostname}/${parts.path}`;
  return name === "" ? undefined : name;
}

/**
 * The URL without a password or token, for messages and logs: `https://user:secret@host/x`
 * becomes `https://user@host/x`. Text that is not a URL with a scheme is returned as it is
 * (scp-like addresses carry no secret).
 */
export function redactUrl(url: string): string {
  if (!withScheme.test(url)) return url;
  try {
    const parsed = new URL(url);
    if (parsed.password === "") return url;
    parsed.password = "";
    return parsed.toString();
  } catch {
    return url;
  }
}
