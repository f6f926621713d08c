/** The glibc setting that caps how many malloc arenas a process keeps. */
export const MALLOC_ARENA_MAX_ENV = "MALLOC_ARENA_MAX";

/** Arenas for a long-running server: one for the main thread, one shared by every other thread. */
const SERVER_MALLOC_ARENAS = "2";

/** Commands that start a process which stays up, where memory kept after start counts. */
const LONG_RUNNING_COMMANDS: ReadonlySet<string> = new Set(["up"]);

/**
 * Whether `deckhand <command>` should start again with bounded malloc arenas: on Linux, for a
 * long-running command, unless the person running it chose a setting of their own.
 *
 * Why: glibc gives each thread that allocates an arena of its own, up to eight per core, and keeps
 * what is freed in it. In `deckhand up`, V8's background compiler threads optimise the embedded
 * database's WebAssembly just after start and leave 20–40 MiB behind in their arenas, which
 * nothing in the process can give back (seen in /proc/PID/smaps): idle memory swung between 283
 * and 311 MiB from run to run; with two arenas, 252–270 MiB.
 */
export function wantsBoundedMallocArenas(
  command: string | undefined,
  environment: NodeJS.ProcessEnv,
  platform: NodeJS.Platform,
): boolean {
  return (
    platform === "linux" &&
    command !== undefined &&
    LONG_RUNNING_COMMANDS.has(command) &&
    environment[MALLOC_ARENA_MAX_ENV] === undefined
  );
}

/**
 * Replaces this process with the same command under bounded malloc arenas when it should run so;
 * returns only when it should not (or cannot: Node without `process.execve`). glibc reads the
 * setting once, when the program starts, so it must be in the environment at exec; `execve` keeps
 * the process id, its Node options and its arguments, so whoever started the command sees one
 * process. It runs before any module of the command is loaded, so the first start costs only Node's.
 */
export function restartWithBoundedMallocArenas(): void {
  if (typeof process.execve !== "function") return;
  if (!wantsBoundedMallocArenas(process.argv[2], process.env, process.platform)) return;
  process.execve(
    process.execPath,
    [process.execPath, ...process.execArgv, ...process.argv.slice(1)],
    {
      ...process.env,
      [MALLOC_ARENA_MAX_ENV]: SERVER_MALLOC_ARENAS,
    },
  );
}
