import { constants } from "node:fs";
import { access, stat } from "node:fs/promises";
import { delimiter, isAbsolute, join, resolve } from "node:path";

export interface ResolveExecutableOptions {
  /** The project whose `node_modules/.bin` is searched first; also the base of relative paths. */
  projectDir?: string;
  /**
   * The base of relative paths when there is no project; the server's working directory is
   * never used, since it depends on where the server happened to be started.
   */
  relativeTo?: string;
  /** The PATH to search. */
  path?: string;
}

async function isExecutableFile(candidate: string): Promise<boolean> {
  try {
    const stats = await stat(candidate);
    if (!stats.isFile()) return false;
    await access(candidate, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * Where `name` would be run from. A path (with a slash) as given, a relative one against the
 * project, else `relativeTo` (never the process's working directory: null without either); a
 * bare name from the project's `node_modules/.bin` first, where `npm install` puts agent CLIs,
 * then PATH. Null when there is no executable file by that name.
 */
export async function resolveExecutable(
  name: string,
  options: ResolveExecutableOptions = {},
): Promise<string | null> {
  if (name.includes("/") || name.includes("\\")) {
    const base = options.projectDir ?? options.relativeTo;
    if (!isAbsolute(name) && base === undefined) return null;
    const candidate = isAbsolute(name) ? name : resolve(base!, name);
    return (await isExecutableFile(candidate)) ? candidate : null;
  }
  const directories = [
    ...(options.projectDir ? [join(options.projectDir, "node_modules", ".bin")] : []),
    ...(options.path ?? "").split(delimiter).filter((directory) => directory !== ""),
  ];
  for (const directory of directories) {
    const candidate = join(directory, name);
    if (await isExecutableFile(candidate)) return candidate;
  }
  return null;
}
