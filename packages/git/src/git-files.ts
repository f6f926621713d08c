// What a repository's files say plainly, without starting git: where its git directories are,
// the commit (and branch) HEAD is at, and its origin's URL. A git process costs the process that
// starts it more than the whole read (a fork of a process holding the embedded database blocks
// its event loop for about 10 ms), and batch runs, agent turns and the sandbox ask these often.
// Only the usual layouts are read (gitrepository-layout); each reader answers undefined for
// anything else, and its caller asks git then. The reads are synchronous: the files are a few
// hundred bytes, read faster than a promise's round trip through the thread pool, and the
// sandbox needs the directories while it builds a command line.
import { readFileSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { isAbsolute, join, resolve } from "node:path";

/** Where a repository's git files are. */
export interface GitDirectories {
  /** This worktree's own git directory: its HEAD and index (`.git`, or the bare repository). */
  gitDirectory: string;
  /** The repository's shared git directory: objects, refs, packed-refs and config. */
  commonDirectory: string;
  /**
   * The worktree's `.git` is a file naming its git directory elsewhere (a linked worktree, or a
   * clone with a separate git directory), so the directories lie outside the worktree.
   */
  linked: boolean;
}

const OBJECT_ID = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;
/** Symbolic refs followed before giving up (git stops at 5 too). */
const MAX_SYMBOLIC_DEPTH = 5;

function readOptional(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return undefined;
  }
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/**
 * The git directories of the worktree or bare repository at `path`: its `.git` directory, the
 * directory its `.git` file names (`gitdir: …`, relative to the worktree), or `path` itself when
 * it is a bare repository (HEAD, objects/ and refs/ side by side); the common directory is the
 * one the git directory's `commondir` file names (relative to it), or the git directory itself.
 * Undefined when `path` is none of these (git would look in its parents then).
 */
export function gitDirectories(path: string): GitDirectories | undefined {
  const dotGit = join(path, ".git");
  let gitDirectory: string;
  let linked = false;
  let found: ReturnType<typeof statSync> | undefined;
  try {
    found = statSync(dotGit);
  } catch {
    found = undefined;
  }
  if (found?.isFile()) {
    const pointer = /^gitdir:\s*(.+?)\s*$/m.exec(readOptional(dotGit) ?? "")?.[1];
    if (pointer === undefined) return undefined;
    gitDirectory = isAbsolute(pointer) ? pointer : resolve(path, pointer);
    linked = true;
  } else if (found?.isDirectory()) {
    gitDirectory = dotGit;
  } else if (
    found === undefined &&
    readOptional(join(path, "HEAD")) !== undefined &&
    isDirectory(join(path, "objects")) &&
    isDirectory(join(path, "refs"))
  ) {
    gitDirectory = path;
  } else {
    return undefined;
  }
  if (!isDirectory(gitDirectory)) return undefined;
  const common = readOptional(join(gitDirectory, "commondir"))?.trim();
  const commonDirectory =
    common === undefined || common === ""
      ? gitDirectory
      : isAbsolute(common)
        ? common
        : resolve(gitDirectory, common);
  if (!isDirectory(commonDirectory)) return undefined;
  return { gitDirectory, commonDirectory, linked };
}

/** What HEAD points at, read from the files. */
export interface HeadFromFiles {
  /** The commit, as `git rev-parse --verify HEAD^{commit}` says it. */
  commit: string;
  /**
   * The branch refs followed from HEAD to the commit, in order (`refs/heads/main`); empty for
   * a detached HEAD.
   */
  refs: string[];
}

/** The object id packed-refs has for `name`; undefined when it has none. */
function packedRef(commonDirectory: string, name: string): string | undefined {
  const packed = readOptional(join(commonDirectory, "packed-refs"));
  if (packed === undefined) return undefined;
  for (const line of packed.split("\n")) {
    const space = line.indexOf(" ");
    if (space !== -1 && line.slice(space + 1) === name) return line.slice(0, space);
  }
  return undefined;
}

/**
 * HEAD's commit and the branch it names in the worktree or bare repository at `path`, from HEAD,
 * a loose ref under refs/heads, or packed-refs. Undefined when the files do not say it plainly:
 * a reftable repository, a ref outside refs/heads (the worktree's own refs/worktree, refs/bisect),
 * a branch with no commit yet, a layout `gitDirectories` does not know.
 */
export function headFromFiles(path: string): HeadFromFiles | undefined {
  const directories = gitDirectories(path);
  if (directories === undefined) return undefined;
  const { gitDirectory, commonDirectory } = directories;
  // A reftable repository keeps its refs in binary tables; its files say nothing here.
  if (isDirectory(join(commonDirectory, "reftable"))) return undefined;
  let target = readOptional(join(gitDirectory, "HEAD"))?.trim();
  const refs: string[] = [];
  for (let depth = 0; depth <= MAX_SYMBOLIC_DEPTH && target !== undefined; depth += 1) {
    if (OBJECT_ID.test(target)) return { commit: target, refs };
    const name = /^ref: (refs\/heads\/\S+)$/.exec(target)?.[1];
    if (name === undefined || name.split("/").some((part) => part === ".." || part === ".")) {
      return undefined;
    }
    refs.push(name);
    target = refTarget(commonDirectory, name);
  }
  return undefined;
}

/** What a ref's loose file holds (an object id or `ref: …`), else its packed-refs entry. */
function refTarget(commonDirectory: string, name: string): string | undefined {
  return readOptional(join(commonDirectory, name))?.trim() ?? packedRef(commonDirectory, name);
}

/** A branch name whose ref file name can only be that ref (no `..`, empty or hidden parts). */
const PLAIN_BRANCH = /^(?!.*(?:^|\/)\.)(?!.*\.lock(?:\/|$))[A-Za-z0-9._-]+(?:\/[A-Za-z0-9._-]+)*$/;

/**
 * The commit of branch `branch` (without `refs/heads/`) in the worktree or bare repository at
 * `path`, from its loose ref or packed-refs, as `git rev-parse refs/heads/<branch>^{commit}`
 * says it. Undefined when the files do not say it plainly (no such branch in them, a symbolic
 * ref, a reftable, a name with characters git reads as more than a name): git answers then.
 */
export function branchFromFiles(path: string, branch: string): string | undefined {
  if (!PLAIN_BRANCH.test(branch) || branch.includes("..")) return undefined;
  const directories = gitDirectories(path);
  if (directories === undefined) return undefined;
  if (isDirectory(join(directories.commonDirectory, "reftable"))) return undefined;
  const target = refTarget(directories.commonDirectory, `refs/heads/${branch}`);
  return target !== undefined && OBJECT_ID.test(target) ? target : undefined;
}

/**
 * The configuration files besides the repository's own that git reads (system, then global),
 * as git's documentation places them.
 */
function outerConfigFiles(): string[] {
  const files: string[] = [];
  if (process.env.GIT_CONFIG_NOSYSTEM === undefined) {
    files.push(process.env.GIT_CONFIG_SYSTEM ?? "/etc/gitconfig");
  }
  if (process.env.GIT_CONFIG_GLOBAL !== undefined) {
    files.push(process.env.GIT_CONFIG_GLOBAL);
  } else {
    let home = process.env.HOME;
    try {
      home ??= homedir();
    } catch {
      // No home directory: git reads no global file there either.
      return files;
    }
    const xdg = process.env.XDG_CONFIG_HOME ?? join(home, ".config");
    files.push(join(xdg, "git", "config"), join(home, ".gitconfig"));
  }
  return files;
}

/** A configuration file that could name a remote, or pull in another file that does. */
const MENTIONS_REMOTE_OR_INCLUDE = /\[\s*(?:remote|include|includeif)\b/i;

/** A section header: `[section]`, `[section "subsection"]` or the old `[section.subsection]`. */
const SECTION_HEADER = /^\[\s*([A-Za-z0-9.-]+)(?:\s+"([^"\\]*)")?\s*\]/;

/**
 * The last `remote.origin.url` of a configuration file's text; null when it has none; undefined
 * when the text is not plain enough to read here (a quote or backslash outside a section header,
 * an escape in a subsection's name, includes, per-worktree configuration, a line this reader does
 * not know).
 */
export function originUrlInConfig(text: string): string | null | undefined {
  if (/\b(?:include|includeif|worktreeconfig)\b/i.test(text)) return undefined;
  let inOrigin = false;
  let url: string | null = null;
  for (const rawLine of text.split("\n")) {
    let line = rawLine.trim();
    if (line.startsWith("[")) {
      const header = SECTION_HEADER.exec(line);
      if (header === null) return undefined;
      const [name, quoted] = [header[1]!, header[2]];
      if (quoted !== undefined) {
        inOrigin = name.toLowerCase() === "remote" && quoted === "origin";
      } else {
        // `[remote.origin]`, the old form, names its subsection in lower case.
        const dot = name.indexOf(".");
        inOrigin =
          dot !== -1 &&
          name.slice(0, dot).toLowerCase() === "remote" &&
          name.slice(dot + 1).toLowerCase() === "origin";
      }
      line = line.slice(header[0].length).trim();
    }
    // Quotes and escapes change where a value and its comment end: git reads those.
    if (/["\\]/.test(line)) return undefined;
    const comment = line.search(/[#;]/);
    if (comment !== -1) line = line.slice(0, comment).trim();
    if (line === "") continue;
    const entry = /^([A-Za-z][A-Za-z0-9-]*)\s*(?:=\s*(.*))?$/.exec(line);
    if (entry === null) return undefined;
    if (!inOrigin || entry[1]!.toLowerCase() !== "url") continue;
    // A key with no `=` is a boolean true, which git prints its own way.
    if (entry[2] === undefined) return undefined;
    // git turns a tab inside a value into a space.
    if (entry[2].includes("\t")) return undefined;
    url = entry[2].trim();
  }
  return url;
}

/**
 * `git config --get remote.origin.url` in the worktree or bare repository at `path`, read from
 * its configuration file: the URL, or null when it has no origin. Undefined (ask git) when the
 * layout is unusual, the file is not plain (see `originUrlInConfig`), or the system or global
 * configuration names a remote or includes another file.
 */
export function originUrlFromFiles(path: string): string | null | undefined {
  const directories = gitDirectories(path);
  if (directories === undefined) return undefined;
  for (const file of outerConfigFiles()) {
    const text = readOptional(file);
    if (text !== undefined && MENTIONS_REMOTE_OR_INCLUDE.test(text)) return undefined;
  }
  const text = readOptional(join(directories.commonDirectory, "config"));
  return text === undefined ? undefined : originUrlInConfig(text);
}
