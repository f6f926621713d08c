import { constants } from "node:fs";
import { access, stat } from "node:fs/promises";
import { delimiter, isAbsolute, join, resolve } from "node:path";

export interface ResolveExecutableOptions {
  /** The project whose `node_modules/.bin` is searched first; also the base of relative paths. */
  projectDir?: string;
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
 * Where `name` would be run from: a path (with a slash) as given, relative to the project;
 * a bare name from the project's `node_modules/.bin` first, where `npm install` puts agent
 * CLIs, then PATH. Null when there is no executable file by that name.
 */
export async function resolveExecutable(
  name: string,
  options: ResolveExecutableOptions = {},
): Promise<string | null> {
  if (name.includes("/") || name.includes("\\")) {
    const candidate = isAbsolute(name) ? name : resolve(options.projectDir ?? process.cwd(), name);
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
