// The part of Sourcegraph's search query language `repositoriesMatchingQuery` understands.
// Deckhand has no search index: the query is answered with git over each configured repository,
// so only what git can answer exactly is accepted, and everything else is refused by name
// rather than ignored (a query that silently matched more repositories would change them).
import { errorMessage } from "@deckhand/errors";
import { BatchesError } from "./batches-error.ts";

export interface PatternFilter {
  /** A regular expression (JavaScript syntax), matched anywhere in the name or path. */
  pattern: string;
  /** `-repo:` / `-file:`: a match excludes instead of includes. */
  negated: boolean;
}

/**
 * How a query's bare words become content patterns, after Sourcegraph's pattern types:
 * `keyword` (Sourcegraph's default for spec versions 2 and 3): each word is a pattern of its
 * own, all must be in the file; `standard` (version 1) and `literal`: the words, joined by
 * single spaces, are one literal pattern; `regexp`: the words, joined by `.*`, are one regular
 * expression. A quoted string is always literal; `/.../` is a regular expression except under
 * `literal`.
 */
export type PatternType = "keyword" | "standard" | "literal" | "regexp";

export interface ContentPattern {
  text: string;
  /** An extended regular expression (as `git grep -E` reads it) rather than literal text. */
  regexp: boolean;
}

export interface ParseRepositoryQueryOptions {
  /** The pattern type without a `patterntype:` filter; `keyword` unless given. */
  defaultPatternType?: PatternType;
}

export interface RepositoryQuery {
  repositories: PatternFilter[];
  files: PatternFilter[];
  /** Content patterns; a file matches when it holds every one. */
  content: ContentPattern[];
  /** How bare words were read (see `PatternType`). */
  patternType: PatternType;
  /** `case:yes`: names, paths and content are matched case-sensitively. */
  caseSensitive: boolean;
  /** `select:repo`: the results are repositories, without search result paths. */
  selectRepository: boolean;
  /** Parts accepted but without effect here, for the user to see. */
  warnings: string[];
}

/** Sourcegraph fields Deckhand cannot answer; named so the error can say so. */
const unsupportedFields = new Set([
  "after",
  "author",
  "before",
  "committer",
  "index",
  "l",
  "lang",
  "language",
  "m",
  "message",
  "msg",
  "repogroup",
  "repohascommitafter",
  "repohasfile",
  "rev",
  "revision",
  "since",
  "stable",
  "timeout",
  "type",
  "until",
  "visibility",
]);

const fieldAliases: Record<string, string> = { r: "repo", f: "file" };
const operators = new Set(["and", "or", "not"]);

function invalid(query: string, reason: string): BatchesError {
  return new BatchesError("invalid_query", `repositoriesMatchingQuery "${query}": ${reason}`);
}

function unsupported(query: string, part: string, advice: string): BatchesError {
  return invalid(query, `${part} is not supported by Deckhand's code hosts; ${advice}`);
}

interface Token {
  /** The field, lower case, when the token is `field:value`. */
  field: string | undefined;
  negated: boolean;
  value: string;
  /** The value was written in quotes. */
  quoted: boolean;
  /** The token as written, for messages. */
  text: string;
}

/** Reads a quoted string starting at `start` (the quote); returns its text and the end. */
function readQuoted(query: string, start: number): { value: string; end: number } {
  const quote = query[start]!;
  let value = "";
  let index = start + 1;
  while (index < query.length) {
    const character = query[index]!;
    // `\"` and `\\` stand for the character; any other backslash stays, so a quoted regular
    // expression such as "^github\.com/" keeps its escapes.
    if (character === "\\" && (query[index + 1] === quote || query[index + 1] === "\\")) {
      value += query[index + 1]!;
      index += 2;
      continue;
    }
    if (character === quote) return { value, end: index + 1 };
    value += character;
    index += 1;
  }
  throw invalid(query, `a ${quote} is never closed; close it or escape it with \\`);
}

function tokenize(query: string): Token[] {
  const tokens: Token[] = [];
  let index = 0;
  while (index < query.length) {
    if (/\s/.test(query[index]!)) {
      index += 1;
      continue;
    }
    const start = index;
    if (query[index] === '"' || query[index] === "'") {
      const { value, end } = readQuoted(query, index);
      tokens.push({
        field: undefined,
        negated: false,
        value,
        quoted: true,
        text: query.slice(start, end),
      });
      index = end;
      continue;
    }
    const field = /^(-?)([A-Za-z][A-Za-z.]*):/.exec(query.slice(index));
    if (field) {
      const valueStart = index + field[0].length;
      if (query[valueStart] === '"' || query[valueStart] === "'") {
        const { value, end } = readQuoted(query, valueStart);
        tokens.push({
          field: field[2]!.toLowerCase(),
          negated: field[1] === "-",
          value,
          quoted: true,
          text: query.slice(start, end),
        });
        index = end;
        continue;
      }
    }
    while (index < query.length && !/\s/.test(query[index]!)) index += 1;
    const text = query.slice(start, index);
    if (field) {
      tokens.push({
        field: field[2]!.toLowerCase(),
        negated: field[1] === "-",
        value: text.slice(field[0].length),
        quoted: false,
        text,
      });
    } else {
      tokens.push({ field: undefined, negated: false, value: text, quoted: false, text });
    }
  }
  return tokens;
}

function checkRegExp(query: string, token: Token, caseSensitive: boolean): void {
  try {
    new RegExp(token.value, caseSensitive ? "" : "i");
  } catch (error) {
    throw invalid(
      query,
      `${token.text} is not a valid regular expression (${errorMessage(error)}); escape special characters such as . ( [ with \\`,
    );
  }
}

function yesNoOnly(query: string, token: Token): "yes" | "no" | "only" {
  const value = token.value.toLowerCase();
  if (value === "yes" || value === "no" || value === "only") return value;
  throw invalid(query, `${token.text}: ${token.field}: takes yes, no or only`);
}

/**
 * Parses a `repositoriesMatchingQuery`. Throws `invalid_query` for a malformed query and for
 * any part outside the supported subset, naming the part: boolean operators and parentheses,
 * `type:`, `lang:`, `rev:`, predicates such as `repo:has.file(...)`, structural search, ...
 */
export function parseRepositoryQuery(
  query: string,
  options: ParseRepositoryQueryOptions = {},
): RepositoryQuery {
  const tokens = tokenize(query);
  const result: RepositoryQuery = {
    repositories: [],
    files: [],
    content: [],
    patternType: options.defaultPatternType ?? "keyword",
    caseSensitive: false,
    selectRepository: false,
    warnings: [],
  };
  const terms: Term[] = [];
  const regexpTokens: Token[] = [];
  for (const token of tokens) {
    if (token.field === undefined) {
      if (
        !token.quoted &&
        (operators.has(token.value.toLowerCase()) || /^[()]/.test(token.value))
      ) {
        throw unsupported(
          query,
          `the operator or parenthesis "${token.value}"`,
          "write one query per `repositoriesMatchingQuery` entry instead (entries are combined with or)",
        );
      }
      if (token.quoted) terms.push({ kind: "phrase", text: token.value });
      else if (/^\/.+\/$/.test(token.value)) {
        terms.push({ kind: "slashed", text: token.value });
      } else terms.push({ kind: "word", text: token.value });
      continue;
    }
    const field = fieldAliases[token.field] ?? token.field;
    switch (field) {
      case "repo":
      case "file": {
        if (/^(has|contains)\b.*\(/.test(token.value)) {
          throw unsupported(
            query,
            `the predicate ${token.text}`,
            `use file: and a content pattern instead`,
          );
        }
        if (field === "repo" && /@/.test(token.value) && !token.quoted) {
          throw unsupported(
            query,
            `a revision in ${token.text}`,
            "name the repository with `repository:` and `branch:` instead",
          );
        }
        if (token.value === "")
          throw invalid(query, `${token.text} needs a pattern after the colon`);
        regexpTokens.push(token);
        const filter = { pattern: token.value, negated: token.negated };
        (field === "repo" ? result.repositories : result.files).push(filter);
        break;
      }
      case "content":
        if (token.negated)
          throw unsupported(query, token.text, "negated content search is not available");
        terms.push({ kind: "content", text: token.value });
        break;
      case "patterntype": {
        const value = token.value.toLowerCase();
        if (value === "keyword" || value === "standard" || value === "literal") {
          result.patternType = value;
        } else if (value === "regexp" || value === "regex") result.patternType = "regexp";
        else {
          throw unsupported(
            query,
            token.text,
            "use patterntype:keyword, standard, literal or regexp",
          );
        }
        break;
      }
      case "case": {
        const value = token.value.toLowerCase();
        if (value !== "yes" && value !== "no")
          throw invalid(query, `${token.text}: case: takes yes or no`);
        result.caseSensitive = value === "yes";
        break;
      }
      case "count":
        if (!/^(all|\d+)$/i.test(token.value))
          throw invalid(query, `${token.text}: count: takes all or a number`);
        if (token.value.toLowerCase() !== "all") {
          result.warnings.push(
            `${token.text} is ignored: Deckhand always searches every configured repository completely`,
          );
        }
        break;
      case "fork":
      case "archived": {
        const value = yesNoOnly(query, token);
        if (value === "only") {
          throw unsupported(
            query,
            token.text,
            `Deckhand's code hosts do not record which repositories are ${field === "fork" ? "forks" : "archived"}; remove it`,
          );
        }
        result.warnings.push(
          `${token.text} is ignored: Deckhand's code hosts do not record which repositories are ${field === "fork" ? "forks" : "archived"}, so every repository is searched`,
        );
        break;
      }
      case "select":
        if (token.value.toLowerCase() !== "repo") {
          throw unsupported(query, token.text, "only select:repo is available");
        }
        result.selectRepository = true;
        break;
      case "context":
        if (token.value.toLowerCase() !== "global") {
          throw unsupported(
            query,
            token.text,
            "search contexts do not exist here; remove it or use context:global",
          );
        }
        break;
      default:
        if (unsupportedFields.has(field)) {
          throw unsupported(
            query,
            `the filter ${field}:`,
            "the supported filters are repo:, -repo:, file:, -file:, content:, patterntype:, case:, count:, fork:, archived:, select:repo and context:global",
          );
        }
        // Not a field Sourcegraph knows (`http://...`): it is text to search for.
        terms.push({ kind: "word", text: token.text });
    }
  }
  for (const token of regexpTokens) checkRegExp(query, token, result.caseSensitive);
  result.content = contentPatterns(terms, result.patternType);
  return result;
}

interface Term {
  /** A bare word, a quoted phrase, a `/regexp/`, or the value of `content:`. */
  kind: "word" | "phrase" | "slashed" | "content";
  text: string;
}

function contentPatterns(terms: readonly Term[], patternType: PatternType): ContentPattern[] {
  const slashedAreWords = patternType === "literal";
  const words = terms
    .filter((term) => term.kind === "word" || (slashedAreWords && term.kind === "slashed"))
    .map((term) => term.text);
  const patterns: ContentPattern[] = [];
  if (words.length > 0) {
    if (patternType === "keyword") {
      for (const text of words) patterns.push({ text, regexp: false });
    } else if (patternType === "regexp") {
      patterns.push({ text: words.join(".*"), regexp: true });
    } else patterns.push({ text: words.join(" "), regexp: false });
  }
  for (const term of terms) {
    if (term.kind === "phrase") patterns.push({ text: term.text, regexp: false });
    else if (term.kind === "content") {
      patterns.push({ text: term.text, regexp: patternType === "regexp" });
    } else if (term.kind === "slashed" && !slashedAreWords) {
      patterns.push({ text: term.text.slice(1, -1), regexp: true });
    }
  }
  return patterns;
}
