// The credentials git needs for a code host's repositories, handed to each git command in its
// environment. A git URL host's URL may carry a password (`https://user:secret@host/x.git`):
// git is only ever given the URL without it (so the mirror's `remote.origin.url`, the worktrees
// that share its config, stored workspaces and messages never hold it), and the password
// travels as an Authorization header for that URL's requests, remembered as a secret of the
// process. A code host connection's token does the same for URLs without a password of their own.
import { redactUrl, separateRemoteCredentials } from "@deckhand/git";
import { rememberSecrets } from "@deckhand/secrets";
import type { CodeHost, GitUrlCodeHost } from "./code-host-config.ts";

/** Git's environment for commands that reach `url` (credentials for a code host), if any. */
export type GitEnvironmentFor = (url: string) => Readonly<Record<string, string>> | undefined;

export interface GitUrlAccess {
  /** The URL git is given and may store: the configured one without its password. */
  url: string;
  /** git's environment with the URL's password; undefined when it has none git can use. */
  environment: Readonly<Record<string, string>> | undefined;
}

/**
 * A configured git URL without its password, and the environment that gives git the password
 * instead. Every form of the password is remembered as a secret of the process, so any output
 * that still holds it (git's own messages, a step's) is redacted.
 */
export function gitUrlAccess(url: string): GitUrlAccess {
  const separated = separateRemoteCredentials(url);
  rememberSecrets(separated.secrets);
  return { url: separated.url, environment: separated.environment };
}

/**
 * Every secret the git URL hosts' URLs carry (passwords as written and decoded, and as their
 * Authorization header encodes them): what a process redacts and withholds from agents.
 */
export function codeHostSecrets(codeHosts: readonly CodeHost[]): string[] {
  return codeHosts.flatMap((host) =>
    host.type === "git" ? separateRemoteCredentials(host.url).secrets : [],
  );
}

/**
 * Git's environment for commands that reach `url` (fetch, ls-remote, push): the password of the
 * configured git URL host the URL belongs to — given as configured, or without its password as
 * mirrors and stored workspaces have it — or else `connections`' token for the URL.
 */
export function codeHostGitEnvironment(
  codeHosts: () => readonly CodeHost[],
  connections: GitEnvironmentFor | undefined,
): GitEnvironmentFor {
  return (url) => {
    const stored = redactUrl(url);
    const host = codeHosts().find(
      (candidate): candidate is GitUrlCodeHost =>
        candidate.type === "git" && redactUrl(candidate.url) === stored,
    );
    const own = gitUrlAccess(host?.url ?? url).environment;
    return own ?? connections?.(stored);
  };
}
