import { type Dirent, type FSWatcher, watch as fsWatch } from "node:fs";
import { lstat, readdir } from "node:fs/promises";
import { join, relative, sep } from "node:path";
import { errnoCode } from "@deckhand/errors";
import type { GitRepositoryState, GitWatchMode } from "@deckhand/wire";
import { type GitRepositoryLocation, readRepositoryState, runGit } from "./git-state.ts";

/**
 * Beyond this many watched directories the watch polls instead: each directory costs an inotify
 * watch, and the per-user limit (often 8,192 to 65,536) is shared with editors and tools.
 */
const MAX_WATCHED_DIRECTORIES = 20_000;

let openFileSystemWatchers = 0;

/** fs.watch handles every GitWatcher holds open right now; tests use it to prove none leak. */
export function openGitWatcherHandles(): number {
  return openFileSystemWatchers;
}

export interface GitWatcherOptions {
  location: GitRepositoryLocation;
  /** A state that differs from the last one reported (never the initial one). */
  onChange(state: GitRepositoryState): void;
  /** The watch cannot go on, e.g. the worktree was removed; the watcher has stopped. */
  onFatal(error: Error): void;
  /** Called for a failure the watch survives (one status run failed, watching fell back). */
  onWarning?(message: string, error: unknown): void;
  /** Quiet time after the last event before the state is recomputed. */
  debounceMs?: number;
  /** A burst that never goes quiet is still reported after this long. */
  maxDelayMs?: number;
  /** Interval of the fallback when file-system events are unavailable. */
  pollIntervalMs?: number;
  /** Replaces `fs.watch`; tests pass one that fails to exercise the polling fallback. */
  watch?: typeof fsWatch;
}

type Job = { kind: "walk"; directories: string[] } | { kind: "rescan" };

/**
 * Watches one worktree and its git directories and reports each new state.
 *
 * Node's recursive `fs.watch` on Linux opens a watch per file, walks synchronously and descends
 * into `.git` and ignored trees such as node_modules, so this keeps its own tree instead: one
 * non-recursive watch per directory git can report on (tracked, or untracked and not ignored),
 * plus the git dir (HEAD, index), the common dir (packed-refs, config) and every directory under
 * its `refs`. Events only schedule a recomputation; a frame goes out only when `git status`
 * says something different, so events for ignored files or git's own lock files cost a status
 * run and nothing else.
 */
export class GitWatcher {
  readonly #options: GitWatcherOptions;
  readonly #location: GitRepositoryLocation;
  readonly #watch: typeof fsWatch;
  /** Watched directories by absolute path. */
  readonly #watchers = new Map<string, FSWatcher>();
  #mode: GitWatchMode = "events";
  #last = "";
  #closed = false;
  /** False until the initial state is read: no change may be reported before it. */
  #started = false;
  #timer: NodeJS.Timeout | null = null;
  #burstStartedAt = 0;
  #poll: NodeJS.Timeout | null = null;
  #running: Promise<void> | null = null;
  #pendingJobs: Job[] = [];
  #dirty = false;
  /** Directories holding tracked files; null when the index may have changed since. */
  #trackedDirectories: Set<string> | null = null;

  constructor(options: GitWatcherOptions) {
    this.#options = options;
    this.#location = options.location;
    this.#watch = options.watch ?? fsWatch;
  }

  get mode(): GitWatchMode {
    return this.#mode;
  }

  /** Directories watched right now (0 when polling or closed). */
  get watchedDirectoryCount(): number {
    return this.#watchers.size;
  }

  /**
   * Reads the initial state, then starts watching. Watching starts first so that a change made
   * while the first status runs is not lost: it schedules another run.
   */
  async start(): Promise<GitRepositoryState> {
    try {
      await this.#watchGitDirectories();
      await this.#walk([this.#location.topLevel]);
    } catch (error) {
      this.#fallBackToPolling(error);
    }
    try {
      const state = await readRepositoryState(this.#location);
      this.#last = JSON.stringify(state);
      this.#started = true;
      // Events during the first read: compare against it (the caller sends it first).
      if (this.#dirty) this.#run();
      return state;
    } catch (error) {
      this.close();
      throw error;
    }
  }

  /** Stops every watch and timer; idempotent. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    if (this.#poll) clearInterval(this.#poll);
    this.#timer = null;
    this.#poll = null;
    this.#closeAllWatchers();
  }

  #closeAllWatchers(): void {
    for (const path of [...this.#watchers.keys()]) this.#unwatch(path);
  }

  #unwatch(path: string): void {
    const watcher = this.#watchers.get(path);
    if (!watcher) return;
    this.#watchers.delete(path);
    watcher.close();
    openFileSystemWatchers -= 1;
  }

  /** Watches one directory; `onEvent` gets the changed entry's name (or null: unknown). */
  #watchDirectory(path: string, onEvent: (type: string, name: string | null) => void): void {
    if (this.#closed || this.#watchers.has(path)) return;
    if (this.#watchers.size >= MAX_WATCHED_DIRECTORIES) {
      throw new Error(
        `more than ${MAX_WATCHED_DIRECTORIES} directories to watch; polling every ${this.#pollIntervalMs()} ms instead`,
      );
    }
    const watcher = this.#watch(path, { persistent: false }, (type, name) =>
      onEvent(type, name === null ? null : String(name)),
    );
    openFileSystemWatchers += 1;
    this.#watchers.set(path, watcher);
    watcher.on("error", (error) => {
      // A watched directory that disappears errors on some kernels; that is a change, not a
      // failure. Anything else means events can no longer be trusted.
      if (this.#closed) return;
      if (errnoCode(error) === "ENOENT") {
        this.#unwatch(path);
        this.#schedule();
      } else {
        this.#fallBackToPolling(error);
      }
    });
  }

  async #watchGitDirectories(): Promise<void> {
    const onGitEvent = () => {
      // The index or HEAD may have moved: which directories hold tracked files may differ.
      this.#trackedDirectories = null;
      this.#schedule();
    };
    this.#watchDirectory(this.#location.gitDir, onGitEvent);
    this.#watchDirectory(this.#location.commonDir, onGitEvent);
    await this.#watchRefs(join(this.#location.commonDir, "refs"));
  }

  /** Watches `refs` and every directory below it (`refs/heads/feature/...` nests). */
  async #watchRefs(directory: string): Promise<void> {
    let entries: Dirent[];
    try {
      entries = await readdir(directory, { withFileTypes: true });
    } catch {
      return;
    }
    this.#watchDirectory(directory, (type, name) => {
      this.#schedule();
      if (type === "rename" && name !== null) {
        void this.#watchRefs(join(directory, name)).catch((error: unknown) =>
          this.#fallBackToPolling(error),
        );
      }
    });
    for (const entry of entries) {
      if (entry.isDirectory()) await this.#watchRefs(join(directory, entry.name));
    }
  }

  #pollIntervalMs(): number {
    return this.#options.pollIntervalMs ?? 3_000;
  }

  #fallBackToPolling(error: unknown): void {
    if (this.#closed || this.#mode === "polling") return;
    this.#mode = "polling";
    this.#closeAllWatchers();
    this.#options.onWarning?.(
      `watching ${this.#location.topLevel} for changes failed; polling every ${this.#pollIntervalMs()} ms`,
      error,
    );
    this.#poll = setInterval(() => this.#schedule(0), this.#pollIntervalMs());
    this.#poll.unref();
  }

  #onWorktreeEvent(directory: string, type: string, name: string | null): void {
    if (this.#closed || this.#mode === "polling") return;
    if (name === null || name === ".gitignore") {
      // Unknown entry, or ignore rules changed: which directories to watch may differ anywhere.
      this.#pendingJobs.push({ kind: "rescan" });
    } else if (type === "rename" && name !== ".git") {
      const path = join(directory, name);
      // Gone, replaced, or a new directory: drop the watches at and below it (only a watched
      // directory has watched ones below it), then walk it again on the next run.
      if (this.#watchers.has(path)) {
        for (const watched of [...this.#watchers.keys()]) {
          if (watched === path || watched.startsWith(`${path}${sep}`)) this.#unwatch(watched);
        }
      }
      this.#pendingJobs.push({ kind: "walk", directories: [path] });
    }
    this.#schedule();
  }

  /** Recomputes after a quiet `debounceMs`, or at the latest `maxDelayMs` after a burst began. */
  #schedule(delayMs = this.#options.debounceMs ?? 150): void {
    if (this.#closed) return;
    const now = Date.now();
    if (this.#timer === null) this.#burstStartedAt = now;
    else clearTimeout(this.#timer);
    const latest = this.#burstStartedAt + (this.#options.maxDelayMs ?? 1_000);
    this.#timer = setTimeout(
      () => {
        this.#timer = null;
        this.#run();
      },
      Math.max(0, Math.min(delayMs, latest - now)),
    );
    this.#timer.unref();
  }

  /** One recomputation at a time; events during a run make it run once more. */
  #run(): void {
    if (this.#closed) return;
    if (this.#running || !this.#started) {
      this.#dirty = true;
      return;
    }
    this.#running = (async () => {
      do {
        this.#dirty = false;
        await this.#refresh();
      } while (this.#dirty && !this.#closed);
    })().finally(() => {
      this.#running = null;
    });
  }

  async #refresh(): Promise<void> {
    const jobs = this.#pendingJobs.splice(0);
    try {
      if (this.#mode === "events" && jobs.length > 0) {
        if (jobs.some((job) => job.kind === "rescan")) {
          this.#trackedDirectories = null;
          await this.#walk([this.#location.topLevel]);
        } else {
          await this.#walk(jobs.flatMap((job) => (job.kind === "walk" ? job.directories : [])));
        }
      }
    } catch (error) {
      this.#fallBackToPolling(error);
    }
    if (this.#closed) return;
    let state: GitRepositoryState;
    try {
      state = await readRepositoryState(this.#location);
    } catch (error) {
      if (this.#closed) return;
      if (!(await this.#stillExists())) {
        this.close();
        this.#options.onFatal(
          new Error(
            `the repository at ${this.#location.topLevel} is gone (its worktree or git directory was removed); the watch has stopped`,
            { cause: error },
          ),
        );
        return;
      }
      // Usually a race with a running git command; the next event or poll tries again.
      this.#options.onWarning?.("git status failed; will retry on the next change", error);
      this.#schedule(this.#pollIntervalMs());
      return;
    }
    if (this.#closed) return;
    const text = JSON.stringify(state);
    if (text === this.#last) return;
    this.#last = text;
    this.#options.onChange(state);
  }

  async #stillExists(): Promise<boolean> {
    try {
      await lstat(this.#location.topLevel);
      await lstat(this.#location.gitDir);
      return true;
    } catch {
      return false;
    }
  }

  async #loadTrackedDirectories(): Promise<Set<string>> {
    if (this.#trackedDirectories) return this.#trackedDirectories;
    const output = await runGit(this.#location.topLevel, ["ls-files", "-z", "--cached"]);
    const directories = new Set<string>();
    for (const file of output.split("\0")) {
      let end = file.lastIndexOf("/");
      while (end > 0) {
        const directory = file.slice(0, end);
        if (directories.has(directory)) break;
        directories.add(directory);
        end = directory.lastIndexOf("/");
      }
    }
    this.#trackedDirectories = directories;
    return directories;
  }

  /**
   * Watches the given worktree directories and every directory below them that git reports on:
   * those holding tracked files, and untracked ones no ignore rule excludes (git never looks
   * inside an ignored directory, so neither does the watch). Level by level, one
   * `git check-ignore` per level.
   */
  async #walk(starts: string[]): Promise<void> {
    const tracked = await this.#loadTrackedDirectories();
    const topLevel = this.#location.topLevel;
    let level: string[] = [];
    for (const start of starts) {
      const stats = await lstat(start).catch(() => null);
      if (stats?.isDirectory()) level.push(start);
    }
    while (level.length > 0 && !this.#closed) {
      const candidates = level
        .filter((path) => !this.#watchers.has(path))
        .map((path) => ({ path, relativePath: relative(topLevel, path).split(sep).join("/") }));
      const untracked = candidates
        .filter(({ path, relativePath }) => path !== topLevel && !tracked.has(relativePath))
        .map(({ relativePath }) => relativePath);
      const ignored = await this.#ignored(untracked);
      const next: string[] = [];
      for (const { path, relativePath } of candidates) {
        if (ignored.has(relativePath)) continue;
        try {
          this.#watchDirectory(path, (type, name) => this.#onWorktreeEvent(path, type, name));
        } catch (error) {
          // Removed between listing and watching: nothing left to watch there.
          if (errnoCode(error) === "ENOENT") continue;
          throw error;
        }
        const entries = await readdir(path, { withFileTypes: true }).catch(() => []);
        for (const entry of entries) {
          // Symbolic links are not followed: git reports the link, not what it points to.
          if (entry.isDirectory() && entry.name !== ".git") next.push(join(path, entry.name));
        }
      }
      level = next;
    }
  }

  async #ignored(paths: string[]): Promise<Set<string>> {
    if (paths.length === 0) return new Set();
    // Exit code 1 means "none of them is ignored".
    const output = await runGit(this.#location.topLevel, ["check-ignore", "-z", "--stdin"], {
      input: `${paths.join("\0")}\0`,
      okExitCodes: [1],
    });
    return new Set(output.split("\0").filter(Boolean));
  }
}
