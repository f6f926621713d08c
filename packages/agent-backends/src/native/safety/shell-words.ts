/**
 * A tokenizer for the part of POSIX shell syntax a safety check needs: words with their quotes
 * and escapes removed, operators, redirections, and flags for anything the shell would expand
 * (which makes a command's real arguments unknowable without running it).
 */

export interface ShellWord {
  /** The word as the command receives it when nothing is expanded: quotes and escapes removed. */
  text: string;
  /** Unquoted or double-quoted `$…`: a parameter the shell substitutes. */
  expands: boolean;
  /** `$(…)`, `$((…))` or backticks: text the shell gets by running something. */
  substitutes: boolean;
  /** An unquoted `*`, `?` or `[`: the shell may replace the word with file names. */
  glob: boolean;
  /** Some part of the word was quoted or escaped. */
  quoted: boolean;
  /** Offsets of the word in the source text. */
  start: number;
  end: number;
}

export type ShellOperator = "&&" | "||" | ";" | ";;" | "|" | "|&" | "&" | "(" | ")" | "\n";

export type RedirectionOperator =
  | "<"
  | ">"
  | ">>"
  | ">|"
  | "<>"
  | "<&"
  | ">&"
  | "&>"
  | "&>>"
  | "<<"
  | "<<-"
  | "<<<";

export type ShellToken =
  | { kind: "word"; word: ShellWord; start: number; end: number }
  | { kind: "operator"; operator: ShellOperator; start: number; end: number }
  | {
      kind: "redirection";
      operator: RedirectionOperator;
      /** The explicit file descriptor (`2>`), or null. */
      fd: number | null;
      /** The file or descriptor after the operator; null when the text ended first. */
      target: ShellWord | null;
      start: number;
      end: number;
    };

export interface ShellTokens {
  tokens: ShellToken[];
  /** Why the text is not a complete command (an unterminated quote, a here-document), or null. */
  error: string | null;
}

const OPERATORS: readonly ShellOperator[] = ["&&", "||", ";;", "|&", ";", "|", "&", "(", ")"];
const REDIRECTIONS: readonly RedirectionOperator[] = [
  "&>>",
  "<<<",
  "<<-",
  "&>",
  ">>",
  ">|",
  "<>",
  "<&",
  ">&",
  "<<",
  "<",
  ">",
];

function isBlank(character: string): boolean {
  return character === " " || character === "\t";
}

function startsOperatorOrRedirection(text: string, index: number): boolean {
  const character = text[index]!;
  return (
    character === "&" ||
    character === "|" ||
    character === ";" ||
    character === "(" ||
    character === ")" ||
    character === "<" ||
    character === ">" ||
    character === "\n"
  );
}

class Scanner {
  readonly text: string;
  index = 0;
  error: string | null = null;

  constructor(text: string) {
    this.text = text;
  }

  /** Skips a balanced `$(…)` (index just past the `(`), honouring quotes inside it. */
  skipParenthesized(): void {
    let depth = 1;
    while (this.index < this.text.length && depth > 0) {
      const character = this.text[this.index]!;
      if (character === "\\") this.index += 2;
      else if (character === "'") this.skipUntil("'");
      else if (character === '"') this.skipDoubleQuoted();
      else if (character === "`") this.skipBackticks();
      else {
        if (character === "(") depth += 1;
        else if (character === ")") depth -= 1;
        this.index += 1;
      }
    }
    if (depth > 0) this.error ??= "unterminated $( … )";
    this.index = Math.min(this.index, this.text.length);
  }

  skipUntil(closing: string): void {
    const end = this.text.indexOf(closing, this.index + 1);
    if (end === -1) {
      this.error ??= `unterminated ${closing} quote`;
      this.index = this.text.length;
    } else this.index = end + 1;
  }

  skipDoubleQuoted(): void {
    this.index += 1;
    while (this.index < this.text.length && this.text[this.index] !== '"') {
      this.index += this.text[this.index] === "\\" ? 2 : 1;
    }
    if (this.index >= this.text.length) this.error ??= 'unterminated " quote';
    this.index = Math.min(this.index + 1, this.text.length);
  }

  /** Skips a backtick substitution (index at the opening backtick). */
  skipBackticks(): void {
    this.index += 1;
    while (this.index < this.text.length && this.text[this.index] !== "`") {
      this.index += this.text[this.index] === "\\" ? 2 : 1;
    }
    if (this.index >= this.text.length) this.error ??= "unterminated ` substitution";
    this.index = Math.min(this.index + 1, this.text.length);
  }

  /** A `$` expansion at the index; marks the word and moves past it. */
  dollar(word: ShellWord): void {
    const next = this.text[this.index + 1];
    if (next === "(") {
      word.substitutes = true;
      this.index += 2;
      this.skipParenthesized();
    } else if (next === "{") {
      word.expands = true;
      const end = this.text.indexOf("}", this.index + 2);
      if (end === -1) {
        this.error ??= "unterminated parameter expansion (no closing brace)";
        this.index = this.text.length;
      } else this.index = end + 1;
    } else if (next !== undefined && /[A-Za-z0-9_@*#?$!-]/.test(next)) {
      word.expands = true;
      this.index += 2;
      if (/[A-Za-z_]/.test(next)) {
        while (this.index < this.text.length && /[A-Za-z0-9_]/.test(this.text[this.index]!)) {
          this.index += 1;
        }
      }
    } else if (next === "'" || next === '"') {
      // Bash's $'…' and $"…" are not POSIX; treat the word as one the shell rewrites.
      word.expands = true;
      this.index += 1;
    } else {
      word.text += "$";
      this.index += 1;
    }
  }

  /** Reads one word starting at the index; the index ends just past it. */
  word(): ShellWord {
    const word: ShellWord = {
      text: "",
      expands: false,
      substitutes: false,
      glob: false,
      quoted: false,
      start: this.index,
      end: this.index,
    };
    const { text } = this;
    while (this.index < text.length) {
      const character = text[this.index]!;
      if (isBlank(character) || startsOperatorOrRedirection(text, this.index)) break;
      if (character === "\\") {
        const next = text[this.index + 1];
        if (next === undefined) {
          word.text += "\\";
          this.index += 1;
        } else if (next === "\n") {
          this.index += 2;
        } else {
          word.text += next;
          word.quoted = true;
          this.index += 2;
        }
      } else if (character === "'") {
        const end = text.indexOf("'", this.index + 1);
        word.quoted = true;
        if (end === -1) {
          this.error ??= "unterminated ' quote";
          word.text += text.slice(this.index + 1);
          this.index = text.length;
        } else {
          word.text += text.slice(this.index + 1, end);
          this.index = end + 1;
        }
      } else if (character === '"') {
        word.quoted = true;
        this.doubleQuoted(word);
      } else if (character === "$") {
        this.dollar(word);
      } else if (character === "`") {
        word.substitutes = true;
        this.skipBackticks();
      } else {
        if (character === "*" || character === "?" || character === "[") word.glob = true;
        word.text += character;
        this.index += 1;
      }
    }
    word.end = this.index;
    return word;
  }

  doubleQuoted(word: ShellWord): void {
    const { text } = this;
    this.index += 1;
    while (this.index < text.length) {
      const character = text[this.index]!;
      if (character === '"') {
        this.index += 1;
        return;
      }
      if (character === "\\") {
        const next = text[this.index + 1];
        if (next === "$" || next === "`" || next === '"' || next === "\\") {
          word.text += next;
          this.index += 2;
        } else if (next === "\n") {
          this.index += 2;
        } else {
          word.text += "\\";
          this.index += 1;
        }
      } else if (character === "$") {
        this.dollar(word);
      } else if (character === "`") {
        word.substitutes = true;
        this.skipBackticks();
      } else {
        word.text += character;
        this.index += 1;
      }
    }
    this.error ??= 'unterminated " quote';
  }
}

/** Splits shell text into tokens. Never throws: what it cannot follow is reported in `error`. */
export function tokenizeShell(text: string): ShellTokens {
  const scanner = new Scanner(text);
  const tokens: ShellToken[] = [];
  let atWordStart = true;
  while (scanner.index < text.length) {
    const start = scanner.index;
    const character = text[start]!;
    if (isBlank(character)) {
      scanner.index += 1;
      atWordStart = true;
      continue;
    }
    if (character === "#" && atWordStart) {
      const end = text.indexOf("\n", start);
      scanner.index = end === -1 ? text.length : end;
      continue;
    }
    if (character === "\\" && text[start + 1] === "\n") {
      scanner.index += 2;
      continue;
    }
    if (character === "\n") {
      tokens.push({ kind: "operator", operator: "\n", start, end: start + 1 });
      scanner.index += 1;
      continue;
    }
    const redirection = REDIRECTIONS.find((operator) => text.startsWith(operator, start));
    if (redirection !== undefined) {
      scanner.index += redirection.length;
      tokens.push(readRedirection(scanner, redirection, null, start));
      atWordStart = true;
      if (redirection === "<<" || redirection === "<<-") {
        scanner.error ??= "here-documents are not supported";
        break;
      }
      continue;
    }
    const operator = OPERATORS.find((candidate) => text.startsWith(candidate, start));
    if (operator !== undefined) {
      scanner.index += operator.length;
      tokens.push({ kind: "operator", operator, start, end: scanner.index });
      atWordStart = true;
      continue;
    }
    const word = scanner.word();
    const next = text[scanner.index];
    if ((next === "<" || next === ">") && /^[0-9]+$/.test(word.text) && !word.quoted) {
      // `2>file`: the digits name the descriptor being redirected.
      const operator = REDIRECTIONS.find((candidate) => text.startsWith(candidate, scanner.index))!;
      scanner.index += operator.length;
      tokens.push(readRedirection(scanner, operator, Number(word.text), start));
      if (operator === "<<" || operator === "<<-") {
        scanner.error ??= "here-documents are not supported";
        break;
      }
      continue;
    }
    tokens.push({ kind: "word", word, start, end: word.end });
    atWordStart = false;
  }
  return { tokens, error: scanner.error };
}

function readRedirection(
  scanner: Scanner,
  operator: RedirectionOperator,
  fd: number | null,
  start: number,
): ShellToken {
  while (scanner.index < scanner.text.length && isBlank(scanner.text[scanner.index]!)) {
    scanner.index += 1;
  }
  let target: ShellWord | null = null;
  if (
    scanner.index < scanner.text.length &&
    !startsOperatorOrRedirection(scanner.text, scanner.index)
  ) {
    target = scanner.word();
  } else {
    scanner.error ??= `redirection ${operator} has no target`;
  }
  return { kind: "redirection", operator, fd, target, start, end: scanner.index };
}

/** One command of a script: assignments, words (the program first), redirections. */
export interface SimpleCommand {
  assignments: ShellWord[];
  words: ShellWord[];
  redirections: Extract<ShellToken, { kind: "redirection" }>[];
}

export interface ShellScript {
  commands: SimpleCommand[];
  /** The operators between the commands, in order. */
  operators: ShellOperator[];
  /** Constructs the script uses that a simple reading cannot follow (subshells, `;;`, …). */
  unsupported: string[];
}

const ASSIGNMENT = /^[A-Za-z_][A-Za-z0-9_]*=/;

/** Groups tokens into simple commands split by control operators. */
export function parseShellScript(text: string): ShellScript {
  const { tokens, error } = tokenizeShell(text);
  const script: ShellScript = { commands: [], operators: [], unsupported: [] };
  if (error !== null) script.unsupported.push(error);
  let command: SimpleCommand = { assignments: [], words: [], redirections: [] };
  const finish = () => {
    if (
      command.words.length > 0 ||
      command.assignments.length > 0 ||
      command.redirections.length > 0
    ) {
      script.commands.push(command);
    }
    command = { assignments: [], words: [], redirections: [] };
  };
  for (const token of tokens) {
    if (token.kind === "word") {
      const isAssignment =
        command.words.length === 0 && ASSIGNMENT.test(text.slice(token.start, token.end));
      (isAssignment ? command.assignments : command.words).push(token.word);
    } else if (token.kind === "redirection") {
      command.redirections.push(token);
    } else {
      if (token.operator === "(" || token.operator === ")") script.unsupported.push("subshell");
      if (token.operator === ";;" || token.operator === "|&") {
        script.unsupported.push(`operator ${token.operator}`);
      }
      finish();
      script.operators.push(token.operator);
    }
  }
  finish();
  return script;
}

/**
 * Splits off a trailing background `&` (not `&&`, not quoted, not in a comment): the command
 * before it, or null when the command does not end in one.
 */
export function withoutTrailingBackground(command: string): string | null {
  const { tokens, error } = tokenizeShell(command);
  if (error !== null) return null;
  let last = tokens.length - 1;
  while (last >= 0) {
    const token = tokens[last]!;
    if (token.kind !== "operator" || token.operator !== "\n") break;
    last -= 1;
  }
  const token = tokens[last];
  if (token === undefined || token.kind !== "operator" || token.operator !== "&") return null;
  const before = command.slice(0, token.start).trimEnd();
  return before.length === 0 ? null : before;
}
