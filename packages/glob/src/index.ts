export { compileGlob, type Glob, type GlobOptions, matchesGlob } from "./glob.ts";
export { GlobError, type GlobErrorCode } from "./glob-error.ts";
export type { GlobSyntax } from "./glob-syntax.ts";
