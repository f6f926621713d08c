// Removing the checkouts an executor killed mid-step left in its work directory, with their
// worktree registrations. Which ones stay (their workspace still runs on that attempt, or their
// run keeps logs) is for whoever knows the runs to say: the database (RunRecovery), or the
// server's executor API for an executor without the database.
import { readdir, readFile, rm } from "node:fs/promises";
import { join, resolve } from "node:path";
import { errnoCode } from "@deckhand/errors";
import { repositoryGit } from "./repository-git.ts";

/** A checkout in a work directory: `<workspace id>.<attempt>`. */
export interface CheckoutName {
  /** The directory's name. */
  name: string;
  workspaceId: string;
  attempt: number;
}

/** Which of the checkouts stay: the names of those. */
export type KeptCheckouts = (checkouts: readonly CheckoutName[]) => Promise<ReadonlySet<string>>;

/** Removes the checkouts of `workDirectory` that `kept` does not keep; answers how many. */
export async function sweepCheckouts(workDirectory: string, kept: KeptCheckouts): Promise<number> {
  const workRoot = resolve(workDirectory);
  let names: string[];
  try {
    names = await readdir(workRoot);
  } catch (error) {
    if (errnoCode(error) === "ENOENT") return 0;
    throw error;
  }
  const checkouts = names.flatMap((name) => {
    const match =
      /^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})(?:\.(\d+))?$/.exec(name);
    return match ? [{ name, workspaceId: match[1]!, attempt: Number(match[2] ?? 0) }] : [];
  });
  if (checkouts.length === 0) return 0;
  const keep = await kept(checkouts);
  let removed = 0;
  for (const checkout of checkouts) {
    if (keep.has(checkout.name)) continue;
    const directory = join(workRoot, checkout.name);
    // The worktree's `.git` file names the repository it is registered in.
    const gitFile = await readFile(join(directory, ".git"), "utf8").catch(() => "");
    const gitDirectory = /^gitdir: (.+)$/m.exec(gitFile)?.[1];
    await rm(directory, { recursive: true, force: true });
    if (gitDirectory !== undefined) {
      const repository = resolve(directory, gitDirectory.trim(), "..", "..");
      await repositoryGit(repository, ["worktree", "prune"], `pruning worktrees of ${repository}`, {
        writes: true,
      }).catch(() => {});
    }
    removed += 1;
  }
  return removed;
}
