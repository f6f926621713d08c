export { quoteShellWord } from "./quote-shell-word.ts";
export {
  type ResolveExecutableOptions,
  resolveExecutable,
} from "./resolve-executable.ts";
export { ShellError, type ShellErrorCode } from "./shell-error.ts";
