// Sourcegraph reads batch specs with gopkg.in/yaml.v3 (src-cli and the server turn the YAML into
// JSON with it before validating), so a spec that parses there must parse here. Where yaml.v3 is
// more lenient than the `yaml` package is indentation inside quoted scalars and flow collections:
// its scanner (scannerc.go) never checks the indentation of a quoted scalar's continuation lines
// (`yaml_parser_scan_flow_scalar`), and does no indentation bookkeeping at all inside `[...]` and
// `{...}` (`yaml_parser_roll_indent`/`unroll_indent` return early when `flow_level > 0`, and
// plain scalars check indentation only when it is 0). So
//
//   description: "first line
//   second line at column 0"
//   on: [{repository: a},
//   {repository: b}]
//
// is accepted there, while the `yaml` package's lexer ends the scalar or the collection at the
// first line that is not indented past its key ("Missing closing quote", "Flow sequence in block
// collection must be sufficiently indented"). That happens in the lexer, which has no option for
// it, and the error codes it leads to (`MISSING_CHAR`, `BAD_INDENT`) cannot be downgraded: by then
// the text has already been split into the wrong tokens. So before parsing, such lines are
// indented up to the scalar's opening quote or the collection's opening bracket. Leading white
// space there is not part of any value (YAML folds it away, in both parsers), so values are
// unchanged; positions are mapped back so every diagnostic points into the text as written.
import { CST, isScalar, Lexer, parseAllDocuments } from "yaml";

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

/** More mended quoted scalars and flow collection lines than any batch spec needs. */
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
function closingQuote(text: string, start: number): number | undefined {
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

/** Something the lexer splits where yaml.v3 reads on, and how to mend it. */
type Repair =
  /** A quoted scalar ended before its closing quote (at `close`). */
  | { kind: "quoted"; start: number; close: number }
  /** A flow collection opened at `open` left at the line starting at `lineStart`. */
  | { kind: "flow"; lineStart: number; open: number };

function isQuoted(token: string): boolean {
  return token[0] === '"' || token[0] === "'";
}

/** The first repair needed at or after `from`; flow collections only when `flow` is set. */
function firstRepair(text: string, from: number, flow: boolean): Repair | undefined {
  let offset = 0;
  let depth = 0;
  let open = 0;
  for (const token of new Lexer().lex(text)) {
    const start = offset;
    if (!markerTokens.has(token)) offset += token.length;
    if (token === CST.FLOW_END) {
      // The lexer leaves a flow collection at a line not indented past the block around it.
      if (flow && depth > 0 && start >= from) {
        return { kind: "flow", lineStart: text.lastIndexOf("\n", start - 1) + 1, open };
      }
      depth = 0;
    } else if (token === "[" || token === "{") {
      if (depth === 0) open = start;
      depth += 1;
    } else if (token === "]" || token === "}") {
      depth = Math.max(0, depth - 1);
    } else if (start >= from && isQuoted(token)) {
      const close = closingQuote(text, start);
      if (close !== undefined && close >= start + token.length) {
        return { kind: "quoted", start, close };
      }
    }
  }
  return undefined;
}

/** Whether a flow collection in `text` is left early or never closed. */
function hasUnfinishedFlowCollection(text: string): boolean {
  let depth = 0;
  for (const token of new Lexer().lex(text)) {
    if (token === CST.FLOW_END) return true;
    if (token === "[" || token === "{") depth += 1;
    else if (token === "]" || token === "}") depth = Math.max(0, depth - 1);
  }
  return depth > 0;
}

function columnOf(text: string, offset: number): number {
  return offset - (text.lastIndexOf("\n", offset - 1) + 1);
}

/** Spaces to put at `lineStart` so the line reaches `column`, if it is short of it. */
function paddingOfLine(text: string, lineStart: number, column: number): Insertion | undefined {
  let spaces = 0;
  while (text[lineStart + spaces] === " ") spaces += 1;
  const rest = text[lineStart + spaces];
  const empty =
    rest === undefined || rest === "\n" || (rest === "\r" && text[lineStart + spaces + 1] === "\n");
  return empty || spaces >= column ? undefined : { offset: lineStart, count: column - spaces };
}

/** Where to insert spaces so each continuation line reaches at least the opening quote's column. */
function paddingFor(text: string, start: number, close: number): Insertion[] {
  const column = columnOf(text, start);
  const insertions: Insertion[] = [];
  for (
    let lineStart = text.indexOf("\n", start) + 1;
    lineStart > 0 && lineStart <= close;
    lineStart = text.indexOf("\n", lineStart) + 1
  ) {
    const insertion = paddingOfLine(text, lineStart, column);
    if (insertion !== undefined) insertions.push(insertion);
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
  const fixed = [...insertions];
  return (offset) => {
    let shift = 0;
    for (const insertion of fixed) {
      const startInText = insertion.offset + shift;
      if (offset < startInText) break;
      // Inside inserted spaces: the line they were put in front of.
      if (offset < startInText + insertion.count) return insertion.offset;
      shift += insertion.count;
    }
    return offset - shift;
  };
}

interface Adjusted {
  text: string;
  insertions: Insertion[];
  flowRepairs: number;
}

function adjust(original: string, flow: boolean): Adjusted {
  const insertions: Insertion[] = [];
  let text = original;
  let originalOffset = mapperFor(insertions);
  let flowRepairs = 0;
  let from = 0;
  // Each repair lexes the text again; the bound keeps hostile input (thousands of such lines)
  // cheap. What is past it is left to the parser, which reports it as before.
  for (let repairs = 0; repairs < maxRepairs; repairs += 1) {
    const repair = firstRepair(text, from, flow);
    if (repair === undefined) break;
    const added =
      repair.kind === "quoted"
        ? paddingFor(text, repair.start, repair.close)
        : [paddingOfLine(text, repair.lineStart, columnOf(text, repair.open))].filter(
            (insertion) => insertion !== undefined,
          );
    // Continue after what was mended: the closing quote, or the line left early.
    const resumeInOriginal = originalOffset(
      repair.kind === "quoted" ? repair.close + 1 : repair.lineStart,
    );
    // A line the padding did not help (it was indented enough) is stepped over, not retried.
    const resumeShift = repair.kind === "flow" && added.length === 0 ? 1 : 0;
    insertions.push(
      ...added.map((insertion) => ({
        offset: originalOffset(insertion.offset),
        count: insertion.count,
      })),
    );
    insertions.sort((left, right) => left.offset - right.offset);
    if (repair.kind === "flow") flowRepairs += 1;
    text = applyInsertions(original, insertions);
    originalOffset = mapperFor(insertions);
    from =
      resumeInOriginal +
      resumeShift +
      insertions.reduce(
        (total, insertion) =>
          insertion.offset <= resumeInOriginal ? total + insertion.count : total,
        0,
      );
  }
  return { text, insertions, flowRepairs };
}

/**
 * The text to parse so that every quoted scalar and flow collection yaml.v3 accepts is accepted
 * by the `yaml` package too, with the same value; see the comment at the top of this file.
 */
export function goYamlCompatibleText(original: string): GoYamlCompatibleText {
  let adjusted = adjust(original, true);
  // A flow collection mended line by line that still does not close was most likely never
  // closed (a forgotten "]"), which yaml.v3 refuses as well: the parser's own message at the
  // first under-indented line says that better than one at the end of the file.
  if (adjusted.flowRepairs > 0 && hasUnfinishedFlowCollection(adjusted.text)) {
    adjusted = adjust(original, false);
  }
  return { text: adjusted.text, originalOffset: mapperFor(adjusted.insertions) };
}

/**
 * Parses `original` as yaml.v3 reads it. A repair is only ever needed where the `yaml` package's
 * lexer ends a quoted scalar or a flow collection early, and it reports every such place as an
 * error, so a text it parses without one is used as it is and lexed only once; the compatible
 * text is made, and parsed, only when there is an error (a property test keeps this so).
 */
export function parseGoYamlCompatible<Parsed extends { errors: readonly unknown[] }>(
  original: string,
  parse: (text: string) => Parsed,
): GoYamlCompatibleText & { parsed: Parsed } {
  const parsed = parse(original);
  const unchanged = { text: original, originalOffset: (offset: number) => offset, parsed };
  if (parsed.errors.length === 0) return unchanged;
  const compatible = goYamlCompatibleText(original);
  if (compatible.text === original) return unchanged;
  return { ...compatible, parsed: parse(compatible.text) };
}

/**
 * Whether every YAML document after the first is empty (a trailing `---` or `...`, or only
 * comments). yaml.v3's `Unmarshal` reads the first document and ignores the rest, so such a
 * file parses there; one whose later documents hold data is refused here instead, since that
 * data would be silently dropped.
 */
export function laterDocumentsAreEmpty(text: string): boolean {
  const documents = parseAllDocuments(text);
  return (
    Array.isArray(documents) &&
    documents
      .slice(1)
      .every(
        ({ contents, errors }) =>
          errors.length === 0 &&
          (contents === null || (isScalar(contents) && contents.value === null)),
      )
  );
}
