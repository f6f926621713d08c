import { statSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

/**
 * The user's credentials, relative to the home directory: what a sandboxed process never sees,
 * whatever it runs. Agent logins are among them: an agent that goes through the model proxy
 * needs none, and one that keeps its own login is given its own back (`readable`).
 */
export const HOME_CREDENTIAL_PATHS: readonly string[] = [
  ".ssh",
  ".gnupg",
  ".aws",
  ".azure",
  ".kube",
  ".docker",
  ".netrc",
  ".git-credentials",
  ".npmrc",
  ".pypirc",
  ".vault-token",
  ".password-store",
  ".terraform.d/credentials.tfrc.json",
  ".cargo/credentials",
  ".cargo/credentials.toml",
  ".config/gh",
  ".config/hub",
  ".config/glab-cli",
  ".config/gcloud",
  ".config/git/credentials",
  ".config/op",
  ".local/share/keyrings",
  ".codex/auth.json",
  ".claude/.credentials.json",
  ".gemini/oauth_creds.json",
  ".qwen/oauth_creds.json",
  ".local/share/opencode/auth.json",
  ".config/goose/secrets.yaml",
];

/**
 * Machine-wide places that hand out more than a sandbox should have: the user's runtime
 * directory (ssh-agent, gpg-agent, D-Bus and rootless Podman sockets) and container engines'
 * sockets, any of which is a way out.
 */
export const MACHINE_HIDDEN_PATHS: readonly string[] = [
  "/run/user",
  "/run/docker.sock",
  "/var/run/docker.sock",
  "/run/podman",
  "/run/containerd",
  "/run/buildkit",
];

export interface HiddenPaths {
  directories: string[];
  files: string[];
}

/**
 * Which of `paths` exist now, split into directories and files (bubblewrap hides each its own
 * way); a missing path needs no hiding, since the sandbox cannot create it either. Read at each
 * start, so a credential file made while the server runs is hidden from the next process.
 */
export function existingHiddenPaths(paths: Iterable<string>): HiddenPaths {
  const hidden: HiddenPaths = { directories: [], files: [] };
  for (const path of new Set(paths)) {
    try {
      const stats = statSync(path);
      if (stats.isDirectory()) hidden.directories.push(path);
      else hidden.files.push(path);
    } catch {
      // Missing or unreadable: nothing to hide.
    }
  }
  return hidden;
}

/** The built-in hidden paths for `home` (the user's home directory by default). */
export function defaultHiddenPaths(home: string = homedir()): string[] {
  return [...HOME_CREDENTIAL_PATHS.map((path) => join(home, path)), ...MACHINE_HIDDEN_PATHS];
}
