import { realpathSync } from "node:fs";
import { resolve } from "node:path";

/** A directory of the server's own and the words an API error says instead of its path. */
export interface ServerDirectory {
  path: string;
  name: string;
}

/**
 * The server's data directory and working directory, as configured and as the file system
 * names them. A path of one character (`/`) is left out: replacing it would garble every path.
 */
export function serverPaths(dataDir: string, cwd: string = process.cwd()): ServerDirectory[] {
  const spellings = (path: string) => {
    const absolute = resolve(path);
    try {
      return [...new Set([absolute, realpathSync(absolute)])];
    } catch {
      return [absolute];
    }
  };
  return [
    ...spellings(dataDir).map((path) => ({ path, name: "<data-dir>" })),
    ...spellings(cwd).map((path) => ({ path, name: "<server-directory>" })),
  ].filter((entry) => entry.path.length > 1);
}

/**
 * `message` with every server path replaced by its name, longest first (the data directory is
 * often inside the working directory). The last line of defence: messages are written without
 * server paths where they are made (git errors name the command, not its directory; clone
 * failures name the repository), and the full paths go to the log.
 */
export function withoutServerPaths(message: string, paths: readonly ServerDirectory[]): string {
  return [...paths]
    .sort((left, right) => right.path.length - left.path.length)
    .reduce((text, { path, name }) => text.replaceAll(path, name), message);
}
