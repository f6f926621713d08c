// A worktree's HEAD commit read from the repository's files: every agent turn notes where the
// session branch was when it began, and a git process for that costs the server more (a fork of
// a process holding the embedded database blocks its event loop for about 10 ms) than the whole
// read. Only the usual layout is read here; anything else is asked of git.
import { readFile, stat } from "node:fs/promises";
import { isAbsolute, join, resolve } from "node:path";
import { errnoCode } from "@deckhand/errors";
import { resolveCommit } from "./git.ts";

const OBJECT_ID = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;
/** Symbolic refs followed before giving up (git stops at 5 too). */
const MAX_SYMBOLIC_DEPTH = 5;

/**
 * The commit HEAD is at in `worktree`, as `git rev-parse --verify HEAD^{commit}` says it: null
 * on a branch with no commit yet. Read from the files (HEAD, a loose ref under refs/heads, or
 * packed-refs) when the worktree has the usual layout; git answers otherwise (a reftable
 * repository, a ref it does not find in the files, a layout it does not know).
 */
export async function headCommit(worktree: string): Promise<string | null> {
  const fromFiles = await headFromFiles(worktree).catch(() => undefined);
  return fromFiles ?? resolveCommit(worktree, "HEAD");
}

/** HEAD's commit from the files; undefined when they do not say it plainly. */
export async function headFromFiles(worktree: string): Promise<string | undefined> {
  const dirs = await gitDirectories(worktree);
  if (dirs === undefined) return undefined;
  // A reftable repository keeps its refs in binary tables; its files say nothing here.
  if (await exists(join(dirs.commonDir, "reftable"))) return undefined;
  let target = (await readFile(join(dirs.gitDir, "HEAD"), "utf8")).trim();
  for (let depth = 0; depth <= MAX_SYMBOLIC_DEPTH; depth += 1) {
    if (OBJECT_ID.test(target)) return target;
    const name = /^ref: (refs\/heads\/\S+)$/.exec(target)?.[1];
    // Refs other than branches may be the worktree's own (refs/worktree, refs/bisect): git's.
    if (name === undefined || name.split("/").some((part) => part === ".." || part === "."))
      return undefined;
    const loose = await readOptional(join(dirs.commonDir, name));
    target = loose === undefined ? await packedRef(dirs.commonDir, name) : loose.trim();
  }
  return undefined;
}

/** This worktree's git dir (HEAD) and the shared one (refs, packed-refs). */
async function gitDirectories(
  worktree: string,
): Promise<{ gitDir: string; commonDir: string } | undefined> {
  const dotGit = join(worktree, ".git");
  const found = await stat(dotGit).catch(() => undefined);
  if (found === undefined) return undefined;
  let gitDir = dotGit;
  if (found.isFile()) {
    // A linked worktree: `.git` is a file naming its git dir under the main one's worktrees/.
    const pointer = /^gitdir: (.+)$/m.exec(await readFile(dotGit, "utf8"))?.[1]?.trim();
    if (pointer === undefined) return undefined;
    gitDir = isAbsolute(pointer) ? pointer : resolve(worktree, pointer);
  } else if (!found.isDirectory()) {
    return undefined;
  }
  const common = (await readOptional(join(gitDir, "commondir")))?.trim();
  const commonDir =
    common === undefined ? gitDir : isAbsolute(common) ? common : resolve(gitDir, common);
  return { gitDir, commonDir };
}

/** The object id packed-refs has for `name`; an empty string (not an id) when it has none. */
async function packedRef(commonDir: string, name: string): Promise<string> {
  const packed = await readOptional(join(commonDir, "packed-refs"));
  if (packed === undefined) return "";
  for (const line of packed.split("\n")) {
    if (line.endsWith(` ${name}`) && line.length === line.indexOf(" ") + 1 + name.length) {
      return line.slice(0, line.indexOf(" "));
    }
  }
  return "";
}

async function readOptional(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, "utf8");
  } catch (error) {
    const code = errnoCode(error);
    if (code === "ENOENT" || code === "ENOTDIR") return undefined;
    throw error;
  }
}

async function exists(path: string): Promise<boolean> {
  return (await stat(path).catch(() => undefined)) !== undefined;
}
