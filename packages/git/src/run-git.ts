import { type ExecFileException, spawnSync } from "node:child_process";
import { errnoCode, errorMessage } from "@deckhand/errors";
import { sharedSpawnHost } from "@deckhand/spawn-host";
import { GitError, type GitErrorCode } from "./git-error.ts";

/**
 * The variables that point git at a repository other than the one `cwd` is in: the list
 * `git rev-parse --local-env-vars` prints, which git itself clears before it works in another
 * repository (a submodule). A process started from a git hook inherits several of them; left in
 * place, `git status` in any directory would report the hook's repository instead.
 */
export const REPOSITORY_LOCATING_VARIABLES: readonly string[] = [
  "GIT_ALTERNATE_OBJECT_DIRECTORIES",
  "GIT_CONFIG",
  "GIT_CONFIG_PARAMETERS",
  "GIT_CONFIG_COUNT",
  "GIT_OBJECT_DIRECTORY",
  "GIT_DIR",
  "GIT_WORK_TREE",
  "GIT_IMPLICIT_WORK_TREE",
  "GIT_GRAFT_FILE",
  "GIT_INDEX_FILE",
  "GIT_NO_REPLACE_OBJECTS",
  "GIT_REPLACE_REF_BASE",
  "GIT_PREFIX",
  "GIT_INTERNAL_SUPER_PREFIX",
  "GIT_SHALLOW_FILE",
  "GIT_COMMON_DIR",
];

/** `GIT_CONFIG_COUNT` numbers these; without the count they would be stray, so they go too. */
const CONFIG_PAIR = /^GIT_CONFIG_(KEY|VALUE)_\d+$/;

export const GIT_RUN_DEFAULTS = {
  timeoutMs: 120_000,
  maxOutputBytes: 64 * 1024 * 1024,
} as const;

export interface GitEnvironmentOptions {
  /**
   * The caller only reads: git may skip optional locks, so `git status` never rewrites the
   * index (which would race a writer in the same worktree and wake a watch on it).
   */
  readOnly?: boolean;
  /** Variables the caller adds, such as a commit identity; they win over everything else. */
  environment?: Readonly<Record<string, string>>;
}

/**
 * The environment every git command runs with: the parent's, minus what would redirect git to
 * another repository, plus no prompts (a missing credential fails instead of hanging), no
 * pager or editor, and the C locale so that output parsers see git's own words.
 */
export function gitEnvironment(
  options: GitEnvironmentOptions = {},
  parent: NodeJS.ProcessEnv = process.env,
): NodeJS.ProcessEnv {
  const environment: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(parent)) {
    if (REPOSITORY_LOCATING_VARIABLES.includes(name) || CONFIG_PAIR.test(name)) continue;
    environment[name] = value;
  }
  environment.GIT_TERMINAL_PROMPT = "0";
  environment.GIT_EDITOR = "true";
  environment.GIT_PAGER = "cat";
  environment.LC_ALL = "C";
  if (options.readOnly) environment.GIT_OPTIONAL_LOCKS = "0";
  else delete environment.GIT_OPTIONAL_LOCKS;
  return { ...environment, ...options.environment };
}

export interface GitRunOptions extends GitEnvironmentOptions {
  /** The directory git runs in; it finds its repository from here. */
  cwd: string;
  /** Written to git's standard input, which is closed afterwards (and at once without it). */
  input?: string;
  /** Exit codes that are answers, not failures (`diff --no-index` exits 1 on a difference). */
  allowedExitCodes?: readonly number[];
  /** Git is stopped (SIGTERM, so it removes its lock files) after this long. */
  timeoutMs?: number;
  /** Stops git; the promise rejects with code `aborted`. */
  signal?: AbortSignal;
  /** Bound on standard output and on standard error, each; past it git is stopped. */
  maxOutputBytes?: number;
}

export interface GitResult {
  stdout: string;
  stderr: string;
  exitCode: number;
}

/**
 * The message names the command, never the directory it ran in: messages travel to API
 * clients, and the directory is the server's own (its working directory, a path in its data
 * directory). The directory stays on the error (`cwd`) for logs.
 */
function failureMessage(code: GitErrorCode, args: readonly string[], detail: string) {
  const command = `git ${args[0] ?? ""}`.trimEnd();
  switch (code) {
    case "git_not_found":
      return `${command} could not start: git is not installed or not on PATH; install git`;
    case "timed_out":
      return `${command} did not finish in time and was stopped`;
    case "aborted":
      return `${command} was aborted`;
    case "output_too_large":
      return `${command} wrote more output than allowed and was stopped`;
    default:
      return `${command} failed: ${detail}`;
  }
}

function gitError(
  code: GitErrorCode,
  args: readonly string[],
  options: GitRunOptions,
  exitCode: number | null,
  stderr: string,
  cause: unknown,
): GitError {
  const detail =
    stderr.trim() || (cause === undefined ? `exit code ${exitCode}` : errorMessage(cause));
  return new GitError(
    code,
    failureMessage(code, args, detail),
    { args, cwd: options.cwd, exitCode, stderr },
    { cause },
  );
}

/**
 * Runs git; resolves with its output, rejects with a GitError carrying git's stderr. Git is
 * started by this process's spawn host rather than by this process, whose fork would copy the
 * page tables of everything it holds (the embedded database) and block its event loop meanwhile.
 */
export function runGit(args: readonly string[], options: GitRunOptions): Promise<GitResult> {
  return sharedSpawnHost()
    .execFile("git", args, {
      cwd: options.cwd,
      env: gitEnvironment(options),
      ...(options.input !== undefined ? { input: options.input } : {}),
      maxBuffer: options.maxOutputBytes ?? GIT_RUN_DEFAULTS.maxOutputBytes,
      timeoutMs: options.timeoutMs ?? GIT_RUN_DEFAULTS.timeoutMs,
      killSignal: "SIGTERM",
      ...(options.signal ? { signal: options.signal } : {}),
    })
    .then(({ error, stdout, stderr }) => {
      if (error === null) return { stdout, stderr, exitCode: 0 };
      const exitCode = typeof error.code === "number" ? error.code : null;
      if (exitCode !== null && options.allowedExitCodes?.includes(exitCode)) {
        return { stdout, stderr, exitCode };
      }
      throw gitError(classify(error, options.signal), args, options, exitCode, stderr, error);
    });
}

function classify(error: ExecFileException, signal: AbortSignal | undefined): GitErrorCode {
  if (error.code === "ENOENT") return "git_not_found";
  if (error.name === "AbortError" || signal?.aborted) return "aborted";
  if (error.code === "ERR_CHILD_PROCESS_STDIO_MAXBUFFER") return "output_too_large";
  // Node kills the child itself only on timeout (abort and overflow were handled above).
  if (error.killed) return "timed_out";
  return "git_failed";
}

/**
 * Runs git and waits for it, blocking the thread: for fixtures and scripts that have nothing
 * else to do meanwhile. Same environment, bounds and errors as `runGit`; no abort signal.
 */
export function runGitSync(args: readonly string[], options: GitRunOptions): GitResult {
  const result = spawnSync("git", args, {
    cwd: options.cwd,
    env: gitEnvironment(options),
    encoding: "utf8",
    input: options.input ?? "",
    maxBuffer: options.maxOutputBytes ?? GIT_RUN_DEFAULTS.maxOutputBytes,
    timeout: options.timeoutMs ?? GIT_RUN_DEFAULTS.timeoutMs,
    killSignal: "SIGTERM",
  });
  const stdout = result.stdout ?? "";
  const stderr = result.stderr ?? "";
  const exitCode = result.status;
  if (result.error) {
    const errno = errnoCode(result.error);
    const code: GitErrorCode =
      errno === "ENOENT"
        ? "git_not_found"
        : errno === "ETIMEDOUT"
          ? "timed_out"
          : errno === "ENOBUFS"
            ? "output_too_large"
            : "git_failed";
    throw gitError(code, args, options, exitCode, stderr, result.error);
  }
  if (exitCode === 0 || (exitCode !== null && options.allowedExitCodes?.includes(exitCode))) {
    return { stdout, stderr, exitCode };
  }
  throw gitError("git_failed", args, options, exitCode, stderr, undefined);
}
