// Where the `deckhand` process keeps what it compiled between runs, so a short command does not
// compile its modules again each time:
//   - Node's on-disk code cache (`module.enableCompileCache`), for the bundled bin and the sources;
//   - from the sources only (`pnpm deckhand`: TypeScript through Node's type stripping), the
//     stripped JavaScript of each TypeScript module: Node 22 keeps compiled code but strips
//     every module's types again at every start, about 0.5 s of CPU for the ~620 modules a
//     standalone `batch preview` loads.
// Both live under Deckhand's cache directory ($XDG_CACHE_HOME/deckhand, else ~/.cache/deckhand),
// private to the user, and hold only code of the modules the command loads (Deckhand's and its
// dependencies'): nothing a run reads, no configuration, no secret.

import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import {
  enableCompileCache,
  type LoadFnOutput,
  type LoadHookContext,
  registerHooks,
  stripTypeScriptTypes,
} from "node:module";
import { join } from "node:path";

/** Deckhand's cache directory: $XDG_CACHE_HOME/deckhand, else ~/.cache/deckhand. */
export function deckhandCacheDirectory(
  environment: Readonly<Record<string, string | undefined>>,
  home: string,
): string {
  // The XDG base directory rules: a relative XDG_CACHE_HOME is invalid and ignored.
  const base = environment.XDG_CACHE_HOME?.startsWith("/")
    ? environment.XDG_CACHE_HOME
    : join(home, ".cache");
  return join(base, "deckhand");
}

/** What a TypeScript module's load becomes once its types are stripped. */
const STRIPPED_FORMATS: Readonly<Record<string, string>> = {
  "module-typescript": "module",
  "commonjs-typescript": "commonjs",
};

/**
 * A load hook that gives Node the stripped JavaScript of a TypeScript module from `directory`
 * when a file there was made from the same source, and strips (and keeps) it otherwise. The
 * stripping is Node's own (`stripTypeScriptTypes`, "strip" mode: types become whitespace, so
 * every line and column stays where it was in the source, as with Node's own loading).
 */
export function strippedTypeScriptLoader(directory: string) {
  return (
    url: string,
    context: LoadHookContext,
    nextLoad: (url: string, context?: Partial<LoadHookContext>) => LoadFnOutput,
  ): LoadFnOutput => {
    const loaded = nextLoad(url, context);
    const format = typeof loaded.format === "string" ? STRIPPED_FORMATS[loaded.format] : undefined;
    if (format === undefined || loaded.source === undefined || loaded.source === null) {
      return loaded;
    }
    const source = asText(loaded.source);
    const path = join(directory, `${createHash("sha256").update(source).digest("hex")}.js`);
    return { ...loaded, format, source: readOrStrip(path, source) };
  };
}

/** A load's source (Node gives a Buffer for a file) as something to hash and strip. */
function asText(source: string | ArrayBuffer | NodeJS.TypedArray): string | Buffer {
  if (typeof source === "string") return source;
  if (ArrayBuffer.isView(source)) {
    return Buffer.from(source.buffer, source.byteOffset, source.byteLength);
  }
  return Buffer.from(source);
}

function readOrStrip(path: string, source: string | Buffer): string {
  try {
    return readFileSync(path, "utf8");
  } catch {
    // Not kept yet (or unreadable): strip it, and keep it for the next start if we can.
  }
  const stripped = stripQuietly(source.toString());
  // Written beside its name and renamed over it, so a process reading it never sees half a file.
  const partial = `${path}.${process.pid}.partial`;
  try {
    writeFileSync(partial, stripped, { mode: 0o600 });
    renameSync(partial, path);
  } catch {
    // A cache that cannot be written only costs the next start its stripping.
  }
  return stripped;
}

/**
 * Node's stripping, without the experimental-feature warning its public function prints (Node
 * strips the same way, silently, when it loads a TypeScript module itself): a command's
 * output would otherwise change with whether this cache was warm.
 */
function stripQuietly(code: string): string {
  const emitWarning = process.emitWarning;
  process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
    const text = typeof warning === "string" ? warning : warning.message;
    if (text.startsWith("stripTypeScriptTypes")) return;
    (emitWarning as (...args: unknown[]) => void).call(process, warning, ...rest);
  }) as typeof process.emitWarning;
  try {
    return stripTypeScriptTypes(code, { mode: "strip" });
  } finally {
    process.emitWarning = emitWarning;
  }
}

/**
 * Turns both caches on for this process; call before the command's modules are imported.
 * `fromSources`: this process runs Deckhand's TypeScript sources (the stripped-module cache is
 * for them only). NODE_DISABLE_COMPILE_CACHE=1 turns both off; NODE_COMPILE_CACHE, when set,
 * is where Node's code cache goes instead.
 */
export function enableModuleCaches(options: {
  fromSources: boolean;
  environment: Readonly<Record<string, string | undefined>>;
  home: string;
}): void {
  if (options.environment.NODE_DISABLE_COMPILE_CACHE) return;
  const directory = deckhandCacheDirectory(options.environment, options.home);
  try {
    mkdirSync(directory, { recursive: true, mode: 0o700 });
  } catch {
    return;
  }
  enableCompileCache(join(directory, "compile"));
  // Other stripping settings (--experimental-transform-types, source maps) keep Node's own.
  if (!options.fromSources || process.features.typescript !== "strip") return;
  if (process.sourceMapsEnabled) return;
  // Named by Node's version: its type stripper (amaro) comes with it.
  const typescript = join(directory, "typescript", process.version);
  try {
    mkdirSync(typescript, { recursive: true, mode: 0o700 });
  } catch {
    return;
  }
  registerHooks({ load: strippedTypeScriptLoader(typescript) });
}
