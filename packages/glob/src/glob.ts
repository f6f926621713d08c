import { runGlobProgram } from "./glob-match.ts";
import { compileGlobProgram, type GlobProgram, type GlobSyntax } from "./glob-syntax.ts";

/** A compiled pattern. Matching takes time linear in the text for a given pattern. */
export interface Glob {
  readonly pattern: string;
  readonly syntax: GlobSyntax;
  /** True when the whole of `text` matches. */
  matches(text: string): boolean;
}

export interface GlobOptions {
  /** "glob" (the default): gobwas/glob syntax; "wildcard": only `*` is special. */
  syntax?: GlobSyntax;
}

class CompiledGlob implements Glob {
  readonly pattern: string;
  readonly syntax: GlobSyntax;
  readonly #program: GlobProgram;

  constructor(pattern: string, syntax: GlobSyntax) {
    this.pattern = pattern;
    this.syntax = syntax;
    this.#program = compileGlobProgram(pattern, syntax);
  }

  matches(text: string): boolean {
    return runGlobProgram(this.#program, text).matched;
  }
}

/** Patterns are few and reused (one per spec field or deny entry): compiled once each. */
const compiled = new Map<string, Glob>();
const cacheLimit = 1_000;

/** Compiles `pattern`; throws `GlobError` `invalid_glob`, naming the problem, for a malformed one. */
export function compileGlob(pattern: string, options: GlobOptions = {}): Glob {
  const syntax = options.syntax ?? "glob";
  const key = `${syntax}\0${pattern}`;
  let glob = compiled.get(key);
  if (glob === undefined) {
    glob = new CompiledGlob(pattern, syntax);
    if (compiled.size >= cacheLimit) compiled.clear();
    compiled.set(key, glob);
  }
  return glob;
}

/** True when the whole of `text` matches `pattern`; throws `GlobError` for a malformed pattern. */
export function matchesGlob(pattern: string, text: string, options: GlobOptions = {}): boolean {
  return compileGlob(pattern, options).matches(text);
}
