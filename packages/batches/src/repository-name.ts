// Repository names as batch specs write them: `host/path`, e.g. `github.com/acme/api`. A remote
// URL names the same repository whichever way it is spelled (https, ssh, scp-like, git, file),
// with or without credentials, a port or a trailing `.git`.

/** `git@host:path`: no scheme, a colon before the first slash. */
const scpLike = /^(?:[^@/]+@)?([^:/]+):(?!\/\/)(.*)$/;
const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i;

function trimPath(path: string): string {
  return path
    .replace(/\/+$/, "")
    .replace(/\.git$/, "")
    .replace(/^\/+/, "")
    .replace(/\/{2,}/g, "/");
}

/**
 * The repository name a remote URL stands for: the host (lower case, without user or port) and
 * the path, without `.git`. A `file://` URL or a plain path has no host, so its name is the
 * path without the leading slash. Undefined for text that is no URL at all.
 */
export function repositoryNameFromUrl(url: string): string | undefined {
  const text = url.trim();
  if (text === "") return undefined;
  if (withScheme.test(text)) {
    let parsed: URL;
    try {
      parsed = new URL(text);
    } catch {
      return undefined;
    }
    const path = trimPath(decodeURIComponent(parsed.pathname));
    const host = parsed.hostname.toLowerCase();
    const name = host === "" ? path : path === "" ? host : `${host}/${path}`;
    return name === "" ? undefined : name;
  }
  if (text.startsWith("/")) return trimPath(text) || undefined;
  const scp = scpLike.exec(text);
  if (scp) {
    const path = trimPath(scp[2]!);
    return path === "" ? undefined : `${scp[1]!.toLowerCase()}/${path}`;
  }
  return undefined;
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
