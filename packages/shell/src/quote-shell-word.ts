import { ShellError } from "./shell-error.ts";

/** Words made only of these characters mean the same to a POSIX shell quoted or not. */
const BARE_WORD = /^[A-Za-z0-9_@%+=:,./-]+$/;

/**
 * A word the shell reads as a variable assignment when it comes first in a command (`A=b cmd`
 * or just `A=b`), instead of as the program to run. Quoting it keeps it a plain word wherever
 * it lands; an `=` anywhere else (`--registry=url`, `analytics.enabled=false`) means nothing to
 * the shell and stays bare, so command lines stay readable.
 */
const ASSIGNMENT_LIKE = /^[A-Za-z_][A-Za-z0-9_]*=/;

/**
 * Quotes `value` as one POSIX shell word that expands to exactly `value`, byte for byte, in
 * any position of a command.
 *
 * Single quotes are the only quoting in which a POSIX shell expands nothing (`$`, backticks,
 * `\`, `!`, globs and newlines are all literal), so the value is wrapped in them and each
 * embedded `'` becomes `'\''` (close, escaped quote, reopen). Words that mean the same bare
 * stay bare so rendered commands remain readable; the empty string becomes `''`. The output
 * is canonical: the same value always gives the same text, so callers can recognise an
 * already-quoted word by quoting what it parses to and comparing.
 *
 * @throws {ShellError} `nul_character` when `value` holds NUL, which no argument or script can
 * carry (it would be silently cut off).
 */
export function quoteShellWord(value: string): string {
  if (value.includes("\u0000")) {
    throw new ShellError(
      "nul_character",
      "a value for the shell contains a NUL character, which no shell argument can carry; remove it",
    );
  }
  if (BARE_WORD.test(value) && !ASSIGNMENT_LIKE.test(value)) return value;
  return `'${value.replaceAll("'", `'\\''`)}'`;
}
