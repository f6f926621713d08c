// Credentials for git remotes, handed to one git command at a time through its environment and
// never written down: not in argv (which `ps` shows every user), not in a remote URL or a config
// file (which git keeps in the repository, where every process that can read the repository —
// a container step with the mirror mounted, say — finds them).
import { redactUrl } from "./remote-url.ts";

/**
 * Git configuration for one command, as variables (`GIT_CONFIG_COUNT`, `GIT_CONFIG_KEY_<n>`,
 * `GIT_CONFIG_VALUE_<n>`): git reads them like `-c key=value`, but they stay out of argv.
 */
export function gitConfigEnvironment(
  entries: readonly (readonly [key: string, value: string])[],
): Record<string, string> {
  const environment: Record<string, string> = { GIT_CONFIG_COUNT: String(entries.length) };
  entries.forEach(([key, value], index) => {
    environment[`GIT_CONFIG_KEY_${index}`] = key;
    environment[`GIT_CONFIG_VALUE_${index}`] = value;
  });
  return environment;
}

export interface GitCredentialEnvironment {
  /** The variables to give git (`runGit`'s `environment`). */
  environment: Record<string, string>;
  /** The `user:password` pair as the header carries it (base64): as good as the password. */
  encoded: string;
}

/**
 * The environment that sends HTTP Basic credentials with git's requests under `url` only (an
 * `http.<url>.extraHeader`, so a redirect to another host does not get them), with no credential
 * helper, so a stored credential is neither used nor overwritten. Should someone trace git's
 * HTTP traffic, git still hides the header (`GIT_TRACE_REDACT`).
 */
export function basicAuthGitEnvironment(
  url: string,
  username: string,
  password: string,
): GitCredentialEnvironment {
  const encoded = Buffer.from(`${username}:${password}`).toString("base64");
  return {
    environment: {
      ...gitConfigEnvironment([
        [`http.${url}.extraHeader`, `Authorization: Basic ${encoded}`],
        ["credential.helper", ""],
      ]),
      GIT_TRACE_REDACT: "1",
    },
    encoded,
  };
}

/** A remote URL with its password taken out, and how git gets the password instead. */
export interface RemoteUrlCredentials {
  /** The URL git may store and print: the one given without its password (a user name stays). */
  url: string;
  /**
   * git's environment carrying the password for an http(s) URL's requests; undefined when the
   * URL has no password, or has one git could not use anyway (ssh, git, file URLs).
   */
  environment: Record<string, string> | undefined;
  /** Every form of the password (as written, decoded, header-encoded), longest first. */
  secrets: string[];
}

function decoded(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/**
 * The password of a URL as written (percent-encoded) and decoded, longest first, so that a
 * decoded form inside the written one cannot leave a piece behind; none without a password.
 */
export function remoteUrlPasswords(url: string): string[] {
  let password: string;
  try {
    password = new URL(url).password;
  } catch {
    return [];
  }
  if (password === "") return [];
  return [...new Set([password, decoded(password)])].sort(
    (left, right) => right.length - left.length,
  );
}

/**
 * Takes the password out of a remote URL (`https://user:secret@host/x` becomes
 * `https://user@host/x`) and, for http(s), puts it in git's environment as a Basic
 * `Authorization` header for that URL's requests. URLs without a password come back as given.
 */
export function separateRemoteCredentials(url: string): RemoteUrlCredentials {
  const passwords = remoteUrlPasswords(url);
  if (passwords.length === 0) return { url, environment: undefined, secrets: [] };
  const parsed = new URL(url);
  const stored = redactUrl(url);
  if (parsed.protocol !== "https:" && parsed.protocol !== "http:") {
    return { url: stored, environment: undefined, secrets: passwords };
  }
  // Keyed without the user name: git's URL matching then applies it whatever user the remote
  // URL names; the query and fragment are no part of a repository's URL.
  const scope = `${parsed.protocol}//${parsed.host}${parsed.pathname}`;
  const { environment, encoded } = basicAuthGitEnvironment(
    scope,
    decoded(parsed.username),
    decoded(parsed.password),
  );
  return { url: stored, environment, secrets: [...passwords, encoded] };
}
