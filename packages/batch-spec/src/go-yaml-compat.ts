// Sourcegraph reads batch specs with gopkg.in/yaml.v3 (src-cli and the server turn the YAML into
// JSON with it before validating), so a spec that parses there must parse here. The one place
// where yaml.v3 is more lenient than the `yaml` package in ways real specs rely on is the
// indentation of quoted scalars: yaml.v3's scanner (`yaml_parser_scan_flow_scalar` in
// scannerc.go) never checks the indentation of a quoted scalar's continuation lines, so
//
//   description: "first line
//   second line at column 0"
//
// is accepted there, while the `yaml` package's lexer ends the scalar at the first line that is
// not indented past its key and reports "Missing closing quote". That happens in the lexer, which
// has no option for it (the error codes `MISSING_CHAR`/`BAD_INDENT` it leads to cannot be
// downgraded either: by then the text has already been split into the wrong tokens). So before
// parsing, continuation lines of such a scalar are indented up to the scalar's opening quote.
// Leading white space of a quoted scalar's continuation line is not part of its value (YAML
// folds it away, in both parsers), so the value is unchanged; positions are mapped back so every
// diagnostic points into the text as the user wrote it.
import { CST, Lexer } from "yaml";

/** Spaces inserted before the character at `offset` of the original text. */
interface Insertion {
  offset: number;
  count: number;
}

export interface GoYamlCompatibleText {
  /** The text to give the `yaml` package; the original text when nothing needed changing. */
  text: string;
  /** The offset in the original text of an offset in `text`. */
  originalOffset(offset: number): number;
}

/** More quoted scalars continued at column 0 than any batch spec has. */
const maxRepairs = 200;

/** Lexer tokens that mark structure without standing for any character of the source. */
const markerTokens = new Set([CST.DOCUMENT, CST.FLOW_END, CST.SCALAR]);

/** A `---` or `...` at the start of a line: yaml.v3 refuses it inside a quoted scalar. */
function isDocumentIndicator(text: string, offset: number): boolean {
  if (!(text.startsWith("---", offset) || text.startsWith("...", offset))) return false;
  const after = text[offset + 3];
  return after === undefined || after === " " || after === "\t" || after === "\n" || after === "\r";
}

/**
 * The offset of the quote that closes the quoted scalar opening at `start`, read the way yaml.v3
 * reads it: escapes in double quotes, `''` in single quotes, and no regard for indentation.
 * Undefined when yaml.v3 would refuse the scalar (no closing quote, or a document marker inside).
 */
export function closingQuote(text: string, start: number): number | undefined {
  const quote = text[start];
  let offset = start + 1;
  while (offset < text.length) {
    if (text[offset - 1] === "\n" && isDocumentIndicator(text, offset)) return undefined;
    const character = text[offset];
    if (quote === '"' && character === "\\") {
      offset += 2;
    } else if (character === quote) {
      if (quote === "'" && text[offset + 1] === "'") offset += 2;
      else return offset;
    } else {
      offset += 1;
    }
  }
  return undefined;
}

/**
 * The first quoted scalar at or after `from` that the lexer ends before its closing quote, with
 * where that quote really is.
 */
function firstCutQuotedScalar(
  text: string,
  from: number,
): { start: number; close: number } | undefined {
  let offset = 0;
  for (const token of new Lexer().lex(text)) {
    const start = offset;
    if (!markerTokens.has(token)) offset += token.length;
    if (start < from || (token[0] !== '"' && token[0] !== "'")) continue;
    const close = closingQuote(text, start);
    if (close !== undefined && close >= start + token.length) return { start, close };
  }
  return undefined;
}

/** Where to insert spaces so each continuation line reaches at least the opening quote's column. */
function paddingFor(text: string, start: number, close: number): Insertion[] {
  const column = start - (text.lastIndexOf("\n", start - 1) + 1);
  const insertions: Insertion[] = [];
  for (
    let lineStart = text.indexOf("\n", start) + 1;
    lineStart > 0 && lineStart <= close;
    lineStart = text.indexOf("\n", lineStart) + 1
  ) {
    let spaces = 0;
    while (text[lineStart + spaces] === " ") spaces += 1;
    const rest = text[lineStart + spaces];
    const empty = rest === "\n" || (rest === "\r" && text[lineStart + spaces + 1] === "\n");
    if (!empty && spaces < column) insertions.push({ offset: lineStart, count: column - spaces });
  }
  return insertions;
}

function applyInsertions(original: string, insertions: readonly Insertion[]): string {
  let text = "";
  let copied = 0;
  for (const { offset, count } of insertions) {
    text += original.slice(copied, offset) + " ".repeat(count);
    copied = offset;
  }
  return text + original.slice(copied);
}

function mapperFor(insertions: readonly Insertion[]): (offset: number) => number {
  return (offset) => {
    let shift = 0;
    for (const insertion of insertions) {
      const startInText = insertion.offset + shift;
      if (offset < startInText) break;
      // Inside inserted spaces: the line they were put in front of.
      if (offset < startInText + insertion.count) return insertion.offset;
      shift += insertion.count;
    }
    return offset - shift;
  };
}

/**
 * The text to parse so that every quoted scalar yaml.v3 accepts is accepted by the `yaml`
 * package too, with the same value; see the comment at the top of this file.
 */
export function goYamlCompatibleText(original: string): GoYamlCompatibleText {
  const insertions: Insertion[] = [];
  let text = original;
  let originalOffset = mapperFor(insertions);
  let from = 0;
  // Each repair lexes the text again; the bound keeps hostile input (thousands of such scalars)
  // cheap. Scalars past it are left to the parser, which reports them as before.
  for (let repairs = 0; repairs < maxRepairs; repairs += 1) {
    const cut = firstCutQuotedScalar(text, from);
    if (cut === undefined) break;
    const added = paddingFor(text, cut.start, cut.close).map((insertion) => ({
      offset: originalOffset(insertion.offset),
      count: insertion.count,
    }));
    const closeInOriginal = originalOffset(cut.close);
    insertions.push(...added);
    insertions.sort((left, right) => left.offset - right.offset);
    text = applyInsertions(original, insertions);
    originalOffset = mapperFor(insertions);
    // Continue after the repaired scalar: its closing quote, moved by the spaces just added.
    from =
      closeInOriginal +
      1 +
      insertions.reduce(
        (total, insertion) =>
          insertion.offset <= closeInOriginal ? total + insertion.count : total,
        0,
      );
  }
  return { text, originalOffset };
}
