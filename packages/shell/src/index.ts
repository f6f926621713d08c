export { quoteShellWord } from "./quote-shell-word.ts";
export { ShellError, type ShellErrorCode } from "./shell-error.ts";
