import { existsSync } from "node:fs";
import { join, relative, resolve, sep } from "node:path";
import type { LaunchProfile } from "@deckhand/sandbox";

/**
 * Where a process started in `workdir` may write: the worktree holding it, found as the
 * outermost directory from `root` down to `workdir` with a `.git` of its own (the agent's root
 * when it is a repository; `sessions/<id>` under a server's root of many worktrees), or else
 * `workdir` alone, so a process never writes beside its worktree into another. No network: an
 * agent's command reaches only the hosts of `sandbox.allowHosts`.
 */
export function workspaceProcessProfile(root: string, workdir: string): LaunchProfile {
  const base = resolve(root);
  const target = resolve(workdir);
  const path = relative(base, target);
  let writable = target;
  if (!path.startsWith("..") && path !== "..") {
    const parts = path === "" ? [] : path.split(sep);
    for (let depth = 0; depth <= parts.length; depth += 1) {
      const candidate = join(base, ...parts.slice(0, depth));
      if (existsSync(join(candidate, ".git"))) {
        writable = candidate;
        break;
      }
    }
  }
  return { writable: [writable], network: { internet: false, modelProxy: false } };
}
