// Maps field paths of a parsed spec back to lines and columns in its text. Lookups walk the
// YAML syntax tree on demand, so a spec without problems pays nothing for positions.
import {
  type Document,
  isAlias,
  isMap,
  isPair,
  isScalar,
  isSeq,
  type LineCounter,
  type Node,
  type Pair,
} from "yaml";
import type { BatchSpecDiagnostic, BatchSpecDiagnosticCode, FieldPath } from "./diagnostics.ts";
import { formatFieldPath } from "./diagnostics.ts";

export interface SourcePosition {
  line: number;
  column: number;
}

/** Which part of a `key: value` entry a diagnostic points at. */
export type PositionTarget = "key" | "value";

interface Located {
  /** The deepest node reached; the whole path when `complete`. */
  node: Node | undefined;
  /** The map entry holding `node`, when it is a map value. */
  pair: Pair | undefined;
  complete: boolean;
}

function rangeStart(node: unknown): number | undefined {
  if (node !== null && typeof node === "object" && "range" in node) {
    const range = (node as { range?: [number, number, number] | null }).range;
    if (range) return range[0];
  }
  return undefined;
}

/** A spec's text and syntax tree, for positions; also works with no text (positions 0:0). */
export class SpecSource {
  readonly file: string;
  /** The text the syntax tree was parsed from; its node ranges are offsets in it. */
  readonly text: string;
  private readonly document: Document | undefined;
  private readonly lineCounter: LineCounter | undefined;
  private readonly originalOffset: (offset: number) => number;

  /**
   * `lineCounter` counts the lines of the text as the user wrote it. When the parsed `text` was
   * adjusted first (see go-yaml-compat.ts), `originalOffset` maps its offsets back to that text.
   */
  constructor(
    file: string,
    text = "",
    document?: Document,
    lineCounter?: LineCounter,
    originalOffset: (offset: number) => number = (offset) => offset,
  ) {
    this.file = file;
    this.text = text;
    this.document = document;
    this.lineCounter = lineCounter;
    this.originalOffset = originalOffset;
  }

  /** 1-based line and column, in the text as written, of a UTF-16 offset in the parsed text. */
  position(offset: number): SourcePosition {
    if (this.lineCounter === undefined) return { line: 0, column: 0 };
    const clamped = Math.max(0, Math.min(offset, this.text.length));
    const { line, col } = this.lineCounter.linePos(this.originalOffset(clamped));
    return { line, column: col };
  }

  private resolve(node: unknown): Node | undefined {
    if (isAlias(node) && this.document !== undefined) {
      return (node.resolve(this.document) as Node | undefined) ?? undefined;
    }
    return (node ?? undefined) as Node | undefined;
  }

  private walk(path: FieldPath): Located {
    let node = this.resolve(this.document?.contents);
    let pair: Pair | undefined;
    for (const segment of path) {
      if (isMap(node)) {
        let found: Pair | undefined;
        for (const item of node.items) {
          const key = isScalar(item.key) ? item.key.value : item.key;
          if (key === segment || (typeof key === "number" && String(key) === segment)) found = item;
        }
        if (found === undefined) return { node, pair, complete: false };
        pair = found;
        node = this.resolve(found.value);
        if (node === undefined) return { node: undefined, pair, complete: true };
      } else if (isSeq(node) && typeof segment === "number") {
        const item = this.resolve(node.items[segment]);
        if (item === undefined) return { node, pair, complete: false };
        node = item;
        pair = undefined;
      } else {
        return { node, pair, complete: false };
      }
    }
    return { node, pair, complete: true };
  }

  /** The offset a diagnostic about `path` points at. */
  offsetOf(path: FieldPath, target: PositionTarget = "key"): number | undefined {
    if (this.document === undefined) return undefined;
    const located = this.walk(path);
    if (!located.complete) {
      // A missing field: point at the entry that should hold it.
      return rangeStart(located.pair?.key) ?? rangeStart(located.node);
    }
    if (target === "key" && located.pair !== undefined) {
      return rangeStart(located.pair.key) ?? rangeStart(located.node);
    }
    return rangeStart(located.node) ?? rangeStart(located.pair?.key);
  }

  /** Line and column for a diagnostic about `path`. */
  locate(path: FieldPath, target: PositionTarget = "key"): SourcePosition {
    const offset = this.offsetOf(path, target);
    return offset === undefined ? { line: 0, column: 0 } : this.position(offset);
  }

  /**
   * Position of an offset inside a string value (a template), as precisely as the source allows:
   * the line of the value holding the offset is looked up verbatim in the source text (block
   * scalars and most quoted strings keep lines intact); when it cannot be found, for example
   * because of escapes, the position of the value itself is used.
   */
  locateInValue(path: FieldPath, value: string, offset: number): SourcePosition {
    const located = this.walk(path);
    const node = located.complete ? located.node : undefined;
    const range = (node as { range?: [number, number, number] } | undefined)?.range;
    if (range === undefined) return this.locate(path, "value");
    const lineStart = value.lastIndexOf("\n", offset - 1) + 1;
    const lineEndIndex = value.indexOf("\n", offset);
    const lineText = value.slice(lineStart, lineEndIndex < 0 ? value.length : lineEndIndex);
    if (lineText.trim() === "") return this.position(range[0]);
    let occurrence = 0;
    for (
      let at = value.indexOf(lineText);
      at >= 0 && at < lineStart;
      at = value.indexOf(lineText, at + 1)
    ) {
      occurrence += 1;
    }
    const raw = this.text.slice(range[0], range[1]);
    let found = raw.indexOf(lineText);
    for (let count = 0; found >= 0 && count < occurrence; count += 1) {
      found = raw.indexOf(lineText, found + 1);
    }
    if (found < 0) return this.position(range[0]);
    return this.position(range[0] + found + (offset - lineStart));
  }

  /** A diagnostic about `path`, positioned at its key or value. */
  diagnostic(
    path: FieldPath,
    code: BatchSpecDiagnosticCode,
    message: string,
    target: PositionTarget = "key",
  ): BatchSpecDiagnostic {
    const { line, column } = this.locate(path, target);
    return { file: this.file, line, column, path: formatFieldPath(path), message, code };
  }

  /** The key node at an offset, and an earlier key of the same name in the same map. */
  duplicateKeyAt(offset: number): { key: string; first: number | undefined } | undefined {
    const search = (node: unknown): { key: string; first: number | undefined } | undefined => {
      if (isMap(node)) {
        const seen = new Map<unknown, number | undefined>();
        for (const item of node.items) {
          if (!isPair(item)) continue;
          const key = isScalar(item.key) ? item.key.value : item.key;
          const start = rangeStart(item.key);
          if (start === offset) {
            return { key: String(key), first: seen.get(key) };
          }
          if (!seen.has(key)) seen.set(key, start);
          const inner = search(item.value);
          if (inner !== undefined) return inner;
        }
      } else if (isSeq(node)) {
        for (const item of node.items) {
          const inner = search(item);
          if (inner !== undefined) return inner;
        }
      }
      return undefined;
    };
    return search(this.document?.contents);
  }
}
