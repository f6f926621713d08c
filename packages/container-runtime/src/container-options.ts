import { statSync } from "node:fs";
import { isAbsolute } from "node:path";
import { ContainerRuntimeError } from "./container-runtime-error.ts";

export interface ContainerMount {
  /** Absolute host path; must exist. */
  readonly source: string;
  /** Absolute path inside the container. */
  readonly target: string;
  readonly readOnly?: boolean;
}

/**
 * Characters that would let a path add options to a `--mount` value: `,` separates options
 * (a path `/w,target=/etc` would re-target the mount; Sourcegraph refuses it for the same reason)
 * and `"` starts a quoted field in Docker's CSV parsing. Control characters have no business in
 * a path handed to a CLI.
 */
const MOUNT_PATH_FORBIDDEN = /[,"\p{Cc}]/u;

/** The first character of `path` that would break a `--mount` value, if any. */
export function mountBreakingCharacter(path: string): string | undefined {
  return MOUNT_PATH_FORBIDDEN.exec(path)?.[0];
}

function invalid(message: string): never {
  throw new ContainerRuntimeError("invalid_options", message);
}

/** `--mount` arguments for bind mounts, after refusing any path that could inject options. */
export function mountArguments(mounts: readonly ContainerMount[]): string[] {
  const args: string[] = [];
  for (const mount of mounts) {
    for (const [role, path] of [
      ["source", mount.source],
      ["target", mount.target],
    ] as const) {
      if (mountBreakingCharacter(path) !== undefined) {
        invalid(
          `mount ${role} ${JSON.stringify(path)} contains a comma, a double quote or a control character, which a container CLI would read as more mount options; rename the directory`,
        );
      }
      if (!isAbsolute(path)) invalid(`mount ${role} ${JSON.stringify(path)} must be absolute`);
    }
    let isDirectoryOrFile = false;
    try {
      const stats = statSync(mount.source);
      isDirectoryOrFile = stats.isDirectory() || stats.isFile();
    } catch {
      invalid(`mount source ${mount.source} does not exist on this machine`);
    }
    if (!isDirectoryOrFile) invalid(`mount source ${mount.source} is not a file or directory`);
    const readOnly = mount.readOnly === true ? ",readonly" : "";
    args.push("--mount", `type=bind,source=${mount.source},target=${mount.target}${readOnly}`);
  }
  return args;
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Variables the CLI reads for itself (where to find conmon and runc, its storage and
 * configuration, its proxy). Giving the CLI process a step's value for one of these would change
 * how the CLI runs, so these alone are passed inline as `-e NAME=value`.
 */
const CLIENT_ENV =
  /^(PATH|HOME|TMPDIR|USER|SHELL|LANG|LC_[A-Z]+|LD_[A-Z_]+|XDG_[A-Z_]+|CONTAINERS?_[A-Z_]+|DOCKER_[A-Z_]+|PODMAN_[A-Z_]+|BUILDAH_[A-Z_]+|STORAGE_[A-Z_]+|REGISTRY_AUTH_FILE|SSL_CERT_(FILE|DIR)|(HTTPS?|NO|ALL)_PROXY|(https?|no|all)_proxy)$/;

/**
 * `-e` arguments and the CLI process's environment. Values go through the CLI's environment
 * (`-e NAME` copies it from there) so they never appear in the process list, where any user of
 * the machine could read a token; only the CLI's own variables are passed inline.
 */
export function environmentArguments(env: Readonly<Record<string, string>>): {
  args: string[];
  clientEnv: NodeJS.ProcessEnv;
} {
  const args: string[] = [];
  const clientEnv: NodeJS.ProcessEnv = { ...process.env };
  for (const [name, value] of Object.entries(env)) {
    if (!ENV_NAME.test(name)) {
      invalid(`environment variable name ${JSON.stringify(name)} is not a valid name`);
    }
    if (value.includes("\0")) invalid(`environment variable ${name} contains a NUL character`);
    if (CLIENT_ENV.test(name)) {
      args.push("-e", `${name}=${value}`);
    } else {
      args.push("-e", name);
      clientEnv[name] = value;
    }
  }
  return { args, clientEnv };
}

const USER = /^[A-Za-z0-9_][A-Za-z0-9_.-]*(:[A-Za-z0-9_][A-Za-z0-9_.-]*)?$/;

export function checkUser(user: string): string {
  if (!USER.test(user)) {
    invalid(`container user ${JSON.stringify(user)} must be NAME, UID or UID:GID`);
  }
  return user;
}

export function checkContainerPath(what: string, path: string): string {
  if (!path.startsWith("/") || /\p{Cc}/u.test(path)) {
    invalid(`${what} ${JSON.stringify(path)} must be an absolute container path`);
  }
  return path;
}

export function checkTimeout(timeoutMs: number | undefined): number | undefined {
  if (timeoutMs === undefined) return undefined;
  if (!Number.isSafeInteger(timeoutMs) || timeoutMs <= 0) {
    invalid(`timeoutMs must be a positive integer of milliseconds, got ${String(timeoutMs)}`);
  }
  return timeoutMs;
}
