// Parses `${{ ... }}` templates into a small syntax tree. The language is the subset of Go's
// text/template that batch specs use (Sourcegraph renders them with text/template and the
// `${{`/`}}` delimiters), so existing specs keep working; nothing is ever handed to `eval`.
import { BatchSpecError } from "../batch-spec-error.ts";

export const templateOpen = "${{";
export const templateClose = "}}";

/** A value-producing term. Offsets are UTF-16 offsets into the template string. */
export type TemplateExpression =
  | { kind: "identifier"; name: string; fields: string[]; start: number; end: number }
  | { kind: "variable"; name: string; fields: string[]; start: number; end: number }
  | { kind: "dot"; fields: string[]; start: number; end: number }
  | { kind: "string"; value: string; start: number; end: number }
  | { kind: "number"; value: number; start: number; end: number }
  | { kind: "boolean"; value: boolean; start: number; end: number }
  | { kind: "nil"; start: number; end: number }
  | { kind: "group"; pipeline: TemplatePipeline; fields: string[]; start: number; end: number };

/** `operand operand...`: a function call when the first operand names a function. */
export interface TemplateCommand {
  operands: TemplateExpression[];
  start: number;
  end: number;
}

/** `[$x :=] command | command ...`; each command's result is the next one's last argument. */
export interface TemplatePipeline {
  declarations: string[];
  commands: TemplateCommand[];
  start: number;
  end: number;
}

export type TemplateNode =
  | { kind: "text"; text: string; start: number }
  | { kind: "output"; pipeline: TemplatePipeline; start: number; end: number }
  | {
      kind: "if";
      branches: { condition: TemplatePipeline; body: TemplateNode[] }[];
      otherwise: TemplateNode[] | undefined;
      start: number;
      end: number;
    }
  | {
      kind: "range";
      pipeline: TemplatePipeline;
      body: TemplateNode[];
      otherwise: TemplateNode[] | undefined;
      start: number;
      end: number;
    }
  | {
      kind: "with";
      pipeline: TemplatePipeline;
      body: TemplateNode[];
      otherwise: TemplateNode[] | undefined;
      start: number;
      end: number;
    };

/** One `${{ ... }}` as it appears in the source, for mapping offsets back to a file. */
export interface TemplateAction {
  start: number;
  end: number;
}

export interface ParsedTemplate {
  source: string;
  nodes: TemplateNode[];
  actions: TemplateAction[];
}

/** True when the string contains a template action at all; most strings do not. */
export function containsTemplate(text: string): boolean {
  return text.includes(templateOpen);
}

function syntaxError(message: string, offset: number): BatchSpecError {
  return new BatchSpecError("template_syntax", message, { offset });
}

type Token =
  | { type: "identifier"; name: string; start: number; end: number }
  | { type: "variable"; name: string; start: number; end: number }
  | { type: "field"; name: string; start: number; end: number }
  | { type: "dot"; start: number; end: number }
  | { type: "string"; value: string; start: number; end: number }
  | { type: "number"; value: number; start: number; end: number }
  | { type: "punctuation"; value: "(" | ")" | "|" | ":=" | "=" | ","; start: number; end: number }
  | { type: "space"; start: number; end: number }
  | { type: "close"; start: number; end: number; trim: boolean };

const identifierStart = /[A-Za-z_]/;
const identifierPart = /[A-Za-z0-9_]/;

const stringEscapes: Record<string, string> = {
  n: "\n",
  t: "\t",
  r: "\r",
  "\\": "\\",
  '"': '"',
  "'": "'",
  a: "\x07",
  b: "\b",
  f: "\f",
  v: "\v",
  "0": "\0",
};

/** Tokenises one action, from just after `${{` up to and including its `}}`. */
function lexAction(source: string, from: number, open: number): { tokens: Token[]; end: number } {
  const tokens: Token[] = [];
  let position = from;
  const length = source.length;
  while (position < length) {
    const character = source[position]!;
    const start = position;
    if (character === " " || character === "\t" || character === "\n" || character === "\r") {
      while (position < length && /[ \t\r\n]/.test(source[position]!)) position += 1;
      // ` -}}` trims the text after the action.
      if (source.startsWith(`-${templateClose}`, position)) {
        tokens.push({ type: "close", start: position, end: position + 3, trim: true });
        return { tokens, end: position + 3 };
      }
      tokens.push({ type: "space", start, end: position });
      continue;
    }
    if (source.startsWith(templateClose, position)) {
      tokens.push({ type: "close", start, end: position + 2, trim: false });
      return { tokens, end: position + 2 };
    }
    if (character === '"') {
      let value = "";
      position += 1;
      for (;;) {
        if (position >= length || source[position] === "\n") {
          throw syntaxError('unterminated string: close it with "', start);
        }
        const next = source[position]!;
        if (next === '"') {
          position += 1;
          break;
        }
        if (next === "\\") {
          const escaped = source[position + 1];
          if (escaped === "u" || escaped === "x" || escaped === "U") {
            const digits = escaped === "x" ? 2 : escaped === "u" ? 4 : 8;
            const hex = source.slice(position + 2, position + 2 + digits);
            if (!new RegExp(`^[0-9a-fA-F]{${digits}}$`).test(hex)) {
              throw syntaxError(`invalid escape "\\${escaped}${hex}" in string`, position);
            }
            value += String.fromCodePoint(Number.parseInt(hex, 16));
            position += 2 + digits;
            continue;
          }
          const replacement = escaped === undefined ? undefined : stringEscapes[escaped];
          if (replacement === undefined) {
            throw syntaxError(
              `invalid escape "\\${escaped ?? ""}" in string: write \\\\ for a backslash`,
              position,
            );
          }
          value += replacement;
          position += 2;
          continue;
        }
        value += next;
        position += 1;
      }
      tokens.push({ type: "string", value, start, end: position });
      continue;
    }
    if (character === "`") {
      const close = source.indexOf("`", position + 1);
      if (close < 0) throw syntaxError("unterminated raw string: close it with `", start);
      tokens.push({
        type: "string",
        value: source.slice(position + 1, close),
        start,
        end: close + 1,
      });
      position = close + 1;
      continue;
    }
    if (
      /[0-9]/.test(character) ||
      (character === "-" && /[0-9]/.test(source[position + 1] ?? ""))
    ) {
      position += 1;
      while (position < length && /[0-9._]/.test(source[position]!)) position += 1;
      const text = source.slice(start, position).replaceAll("_", "");
      const value = Number(text);
      if (!Number.isFinite(value)) throw syntaxError(`invalid number "${text}"`, start);
      tokens.push({ type: "number", value, start, end: position });
      continue;
    }
    if (character === "$") {
      position += 1;
      while (position < length && identifierPart.test(source[position]!)) position += 1;
      tokens.push({ type: "variable", name: source.slice(start, position), start, end: position });
      continue;
    }
    if (character === ".") {
      position += 1;
      if (position < length && identifierStart.test(source[position]!)) {
        while (position < length && identifierPart.test(source[position]!)) position += 1;
        tokens.push({
          type: "field",
          name: source.slice(start + 1, position),
          start,
          end: position,
        });
      } else {
        tokens.push({ type: "dot", start, end: position });
      }
      continue;
    }
    if (identifierStart.test(character)) {
      while (position < length && identifierPart.test(source[position]!)) position += 1;
      tokens.push({
        type: "identifier",
        name: source.slice(start, position),
        start,
        end: position,
      });
      continue;
    }
    if (character === ":" && source[position + 1] === "=") {
      tokens.push({ type: "punctuation", value: ":=", start, end: position + 2 });
      position += 2;
      continue;
    }
    if (
      character === "(" ||
      character === ")" ||
      character === "|" ||
      character === "=" ||
      character === ","
    ) {
      tokens.push({ type: "punctuation", value: character, start, end: position + 1 });
      position += 1;
      continue;
    }
    throw syntaxError(
      `unexpected character ${JSON.stringify(character)} in a template expression`,
      start,
    );
  }
  throw syntaxError(`unclosed "${templateOpen}": end the expression with "${templateClose}"`, open);
}

type Action =
  | { kind: "pipeline"; pipeline: TemplatePipeline; start: number; end: number }
  | { kind: "if"; pipeline: TemplatePipeline; start: number; end: number }
  | { kind: "else"; start: number; end: number }
  | { kind: "else-if"; pipeline: TemplatePipeline; start: number; end: number }
  | { kind: "else-with"; pipeline: TemplatePipeline; start: number; end: number }
  | { kind: "end"; start: number; end: number }
  | { kind: "range"; pipeline: TemplatePipeline; start: number; end: number }
  | { kind: "with"; pipeline: TemplatePipeline; start: number; end: number };

const unsupportedKeywords = new Set(["define", "template", "block", "break", "continue", "call"]);

/** Parses the tokens of one action (without the close token). */
class ActionParser {
  private index = 0;
  private readonly tokens: Token[];
  private readonly actionStart: number;

  constructor(tokens: Token[], actionStart: number) {
    this.tokens = tokens.filter((token) => token.type !== "close");
    this.actionStart = actionStart;
  }

  parse(): Action {
    this.skipSpace();
    const first = this.peek();
    const start = this.actionStart;
    if (first === undefined) throw syntaxError("empty template expression", this.actionStart);
    if (first.type === "identifier") {
      switch (first.name) {
        case "if":
          this.index += 1;
          return { kind: "if", pipeline: this.pipelineToEnd(first.end), start, end: first.end };
        case "range":
          this.index += 1;
          return { kind: "range", pipeline: this.pipelineToEnd(first.end), start, end: first.end };
        case "with":
          this.index += 1;
          return { kind: "with", pipeline: this.pipelineToEnd(first.end), start, end: first.end };
        case "end":
          this.index += 1;
          this.expectEnd("end");
          return { kind: "end", start, end: first.end };
        case "else": {
          this.index += 1;
          this.skipSpace();
          const next = this.peek();
          if (next?.type === "identifier" && next.name === "if") {
            this.index += 1;
            return {
              kind: "else-if",
              pipeline: this.pipelineToEnd(next.end),
              start,
              end: next.end,
            };
          }
          if (next?.type === "identifier" && next.name === "with") {
            this.index += 1;
            return {
              kind: "else-with",
              pipeline: this.pipelineToEnd(next.end),
              start,
              end: next.end,
            };
          }
          this.expectEnd("else");
          return { kind: "else", start, end: first.end };
        }
        default:
          if (unsupportedKeywords.has(first.name)) {
            throw syntaxError(
              `"${first.name}" is not supported in batch spec templates`,
              first.start,
            );
          }
      }
    }
    const pipeline = this.pipelineToEnd(start);
    return { kind: "pipeline", pipeline, start, end: pipeline.end };
  }

  private peek(): Token | undefined {
    return this.tokens[this.index];
  }

  private skipSpace(): void {
    while (this.tokens[this.index]?.type === "space") this.index += 1;
  }

  private expectEnd(keyword: string): void {
    this.skipSpace();
    const extra = this.peek();
    if (extra !== undefined) {
      throw syntaxError(`unexpected input after "${keyword}"`, extra.start);
    }
  }

  private pipelineToEnd(after: number): TemplatePipeline {
    const pipeline = this.pipeline(after);
    this.skipSpace();
    const extra = this.peek();
    if (extra !== undefined) {
      throw syntaxError(
        extra.type === "punctuation" && extra.value === ")"
          ? 'unexpected ")": it closes no "("'
          : "unexpected input in template expression",
        extra.start,
      );
    }
    return pipeline;
  }

  /** `[$a[, $b] :=] command (| command)*`, stopping before `)` or the end. */
  private pipeline(after: number): TemplatePipeline {
    this.skipSpace();
    const start = this.peek()?.start ?? after;
    const declarations = this.declarations();
    const commands: TemplateCommand[] = [];
    for (;;) {
      commands.push(this.command(start));
      this.skipSpace();
      const next = this.peek();
      if (next?.type === "punctuation" && next.value === "|") {
        this.index += 1;
        continue;
      }
      break;
    }
    const last = commands[commands.length - 1]!;
    return { declarations, commands, start, end: last.end };
  }

  private declarations(): string[] {
    const saved = this.index;
    const names: string[] = [];
    for (;;) {
      this.skipSpace();
      const token = this.peek();
      if (token?.type !== "variable") break;
      this.index += 1;
      names.push(token.name);
      this.skipSpace();
      const separator = this.peek();
      if (separator?.type === "punctuation" && separator.value === ",") {
        this.index += 1;
        continue;
      }
      if (
        separator?.type === "punctuation" &&
        (separator.value === ":=" || separator.value === "=")
      ) {
        this.index += 1;
        if (names.length > 2) {
          throw syntaxError("declare at most two variables ($index, $element)", token.start);
        }
        return names;
      }
      break;
    }
    this.index = saved;
    return [];
  }

  private command(pipelineStart: number): TemplateCommand {
    const operands: TemplateExpression[] = [];
    for (;;) {
      this.skipSpace();
      const token = this.peek();
      if (
        token === undefined ||
        (token.type === "punctuation" && (token.value === "|" || token.value === ")"))
      ) {
        break;
      }
      operands.push(this.operand());
    }
    if (operands.length === 0) {
      const at = this.peek()?.start ?? pipelineStart;
      throw syntaxError("missing value in template expression", at);
    }
    return { operands, start: operands[0]!.start, end: operands[operands.length - 1]!.end };
  }

  /** Field names directly attached to the previous token (`a.b.c`, no spaces). */
  private fields(): { fields: string[]; end: number | undefined } {
    const fields: string[] = [];
    let end: number | undefined;
    for (;;) {
      const token = this.peek();
      if (token?.type !== "field") break;
      const previous = this.tokens[this.index - 1];
      if (previous !== undefined && previous.end !== token.start) break;
      fields.push(token.name);
      end = token.end;
      this.index += 1;
    }
    return { fields, end };
  }

  private operand(): TemplateExpression {
    const token = this.peek()!;
    this.index += 1;
    switch (token.type) {
      case "identifier": {
        if (token.name === "true" || token.name === "false") {
          return {
            kind: "boolean",
            value: token.name === "true",
            start: token.start,
            end: token.end,
          };
        }
        if (token.name === "nil") return { kind: "nil", start: token.start, end: token.end };
        const { fields, end } = this.fields();
        return {
          kind: "identifier",
          name: token.name,
          fields,
          start: token.start,
          end: end ?? token.end,
        };
      }
      case "variable": {
        const { fields, end } = this.fields();
        return {
          kind: "variable",
          name: token.name,
          fields,
          start: token.start,
          end: end ?? token.end,
        };
      }
      case "field": {
        this.index -= 1;
        const { fields, end } = this.fields();
        return { kind: "dot", fields, start: token.start, end: end ?? token.end };
      }
      case "dot":
        return { kind: "dot", fields: [], start: token.start, end: token.end };
      case "string":
        return { kind: "string", value: token.value, start: token.start, end: token.end };
      case "number":
        return { kind: "number", value: token.value, start: token.start, end: token.end };
      case "punctuation": {
        if (token.value === "(") {
          const pipeline = this.pipeline(token.end);
          this.skipSpace();
          const close = this.peek();
          if (close?.type !== "punctuation" || close.value !== ")") {
            throw syntaxError('unclosed "(": add ")"', token.start);
          }
          this.index += 1;
          const { fields, end } = this.fields();
          return { kind: "group", pipeline, fields, start: token.start, end: end ?? close.end };
        }
        throw syntaxError(`unexpected "${token.value}" in template expression`, token.start);
      }
      default:
        throw syntaxError("unexpected input in template expression", token.start);
    }
  }
}

interface Frame {
  kind: "root" | "if" | "range" | "with";
  node: TemplateNode | undefined;
  body: TemplateNode[];
  start: number;
}

function trimEnd(nodes: TemplateNode[]): void {
  const last = nodes[nodes.length - 1];
  if (last?.kind === "text") {
    last.text = last.text.replace(/[ \t\r\n]+$/, "");
    if (last.text === "") nodes.pop();
  }
}

/**
 * Parses a template. Throws a `BatchSpecError` with code `template_syntax` and the offset of the
 * problem for input that is not a well-formed template.
 */
export function parseTemplate(source: string): ParsedTemplate {
  const nodes: TemplateNode[] = [];
  const actions: TemplateAction[] = [];
  const stack: Frame[] = [{ kind: "root", node: undefined, body: nodes, start: 0 }];
  let position = 0;
  let trimNext = false;
  const current = () => stack[stack.length - 1]!;

  for (;;) {
    const open = source.indexOf(templateOpen, position);
    let text = source.slice(position, open < 0 ? source.length : open);
    if (trimNext) text = text.replace(/^[ \t\r\n]+/, "");
    if (text !== "") current().body.push({ kind: "text", text, start: position });
    if (open < 0) break;

    let contentStart = open + templateOpen.length;
    // `${{- ` trims the text before the action.
    if (source[contentStart] === "-" && /[ \t\r\n]/.test(source[contentStart + 1] ?? "")) {
      trimEnd(current().body);
      contentStart += 1;
    }
    // `${{/* comment */}}`
    const afterSpace = source.slice(contentStart).match(/^[ \t\r\n]*/)![0].length;
    if (source.startsWith("/*", contentStart + afterSpace)) {
      const commentEnd = source.indexOf("*/", contentStart + afterSpace + 2);
      if (commentEnd < 0) throw syntaxError('unclosed comment: end it with "*/}}"', open);
      const rest = source.slice(commentEnd + 2);
      const closeMatch = rest.match(/^([ \t\r\n]*-)?[ \t\r\n]*\}\}/);
      if (closeMatch === null) throw syntaxError('a comment must be followed by "}}"', commentEnd);
      trimNext = closeMatch[1] !== undefined;
      position = commentEnd + 2 + closeMatch[0].length;
      actions.push({ start: open, end: position });
      continue;
    }

    const { tokens, end } = lexAction(source, contentStart, open);
    const close = tokens[tokens.length - 1]!;
    trimNext = close.type === "close" && close.trim;
    position = end;
    actions.push({ start: open, end });
    const action = new ActionParser(tokens, open).parse();
    const frame = current();
    switch (action.kind) {
      case "pipeline":
        frame.body.push({ kind: "output", pipeline: action.pipeline, start: open, end });
        break;
      case "if": {
        const node: TemplateNode = {
          kind: "if",
          branches: [{ condition: action.pipeline, body: [] }],
          otherwise: undefined,
          start: open,
          end,
        };
        frame.body.push(node);
        stack.push({ kind: "if", node, body: node.branches[0]!.body, start: open });
        break;
      }
      case "range":
      case "with": {
        const body: TemplateNode[] = [];
        const node: TemplateNode = {
          kind: action.kind,
          pipeline: action.pipeline,
          body,
          otherwise: undefined,
          start: open,
          end,
        };
        frame.body.push(node);
        stack.push({ kind: action.kind, node, body, start: open });
        break;
      }
      case "else":
      case "else-if":
      case "else-with": {
        const node = frame.node;
        if (node === undefined || node.kind === "text" || node.kind === "output") {
          throw syntaxError('"else" without a matching "if", "range" or "with"', open);
        }
        if (node.kind === "if" && action.kind === "else-if") {
          if (node.otherwise !== undefined) throw syntaxError('"else if" after "else"', open);
          const branch = { condition: action.pipeline, body: [] as TemplateNode[] };
          node.branches.push(branch);
          frame.body = branch.body;
          break;
        }
        if (action.kind === "else-if") {
          throw syntaxError('"else if" belongs in an "if" block; nest an "if" inside "else"', open);
        }
        if (action.kind === "else-with") {
          throw syntaxError('"else with" is not supported; nest a "with" inside "else"', open);
        }
        if (node.otherwise !== undefined) throw syntaxError('a second "else" in one block', open);
        node.otherwise = [];
        frame.body = node.otherwise;
        break;
      }
      case "end": {
        if (stack.length === 1) {
          throw syntaxError('"end" without a matching "if", "range" or "with"', open);
        }
        const node = frame.node!;
        if (node.kind !== "text") node.end = end;
        stack.pop();
        break;
      }
    }
  }
  if (stack.length > 1) {
    const frame = current();
    throw syntaxError(`"${frame.kind}" is never closed: add "\${{ end }}"`, frame.start);
  }
  return { source, nodes, actions };
}
