// The batch spec editor: CodeMirror 6 with YAML, completion and hover docs from the batch
// spec's JSON Schema (codemirror-json-schema), and @deckhand/batch-spec's own located
// diagnostics at their line as you type. Loaded lazily: only the new batch change screen needs
// it, and it is most of that screen's weight.
import {
  autocompletion,
  closeBrackets,
  closeBracketsKeymap,
  completionKeymap,
} from "@codemirror/autocomplete";
import { defaultKeymap, history, historyKeymap } from "@codemirror/commands";
import { yaml, yamlLanguage } from "@codemirror/lang-yaml";
import {
  bracketMatching,
  HighlightStyle,
  indentOnInput,
  syntaxHighlighting,
} from "@codemirror/language";
import { type Diagnostic, linter, lintGutter, lintKeymap } from "@codemirror/lint";
import { EditorState, type Text } from "@codemirror/state";
import {
  EditorView,
  highlightActiveLine,
  highlightActiveLineGutter,
  hoverTooltip,
  keymap,
  lineNumbers,
} from "@codemirror/view";
import {
  type BatchSpecDiagnostic,
  batchSpecJsonSchema,
  parseBatchSpec,
} from "@deckhand/batch-spec";
import { tags } from "@lezer/highlight";
import { stateExtensions } from "codemirror-json-schema";
import { yamlCompletion, yamlSchemaHover } from "codemirror-json-schema/yaml";
import { useEffect, useRef } from "react";

/** The file name diagnostics carry. */
export const SPEC_FILE = "batch-spec.yaml";

/** Validates a spec as the server will: every problem with its line and column. */
export function validateSpec(source: string): BatchSpecDiagnostic[] {
  const format = source.trimStart().startsWith("{") ? "json" : "yaml";
  return parseBatchSpec(source, { file: SPEC_FILE, format }).diagnostics;
}

/** A diagnostic's place in the document: its line and column, or the whole first line. */
function rangeOf(doc: Text, diagnostic: BatchSpecDiagnostic): { from: number; to: number } {
  if (diagnostic.line < 1) return { from: 0, to: doc.line(1).to };
  const line = doc.line(Math.min(diagnostic.line, doc.lines));
  const from = Math.min(line.from + Math.max(diagnostic.column - 1, 0), line.to);
  // To the end of the word (or the line when the column points at its end).
  const rest = doc.sliceString(from, line.to);
  const word = /^[^\s:,]+/.exec(rest)?.[0].length ?? 0;
  return { from, to: word > 0 ? from + word : line.to };
}

const highlight = HighlightStyle.define([
  { tag: [tags.propertyName, tags.definition(tags.propertyName)], color: "var(--cm-key)" },
  { tag: [tags.string, tags.special(tags.string)], color: "var(--cm-string)" },
  { tag: [tags.number, tags.bool, tags.null, tags.atom], color: "var(--cm-atom)" },
  { tag: [tags.comment, tags.lineComment], color: "var(--muted)", fontStyle: "italic" },
  { tag: [tags.keyword, tags.meta], color: "var(--cm-keyword)" },
]);

const theme = EditorView.theme({
  "&": { backgroundColor: "var(--surface)", color: "var(--text)", fontSize: "0.9rem" },
  ".cm-content": { fontFamily: "ui-monospace, SFMono-Regular, Menlo, monospace" },
  ".cm-gutters": {
    backgroundColor: "var(--code-bg)",
    color: "var(--muted)",
    borderRight: "1px solid var(--border)",
  },
  ".cm-activeLine, .cm-activeLineGutter": { backgroundColor: "var(--cm-active-line)" },
  "&.cm-focused .cm-cursor": { borderLeftColor: "var(--text)" },
  "&.cm-focused .cm-selectionBackground, .cm-selectionBackground": {
    backgroundColor: "var(--cm-selection)",
  },
  ".cm-tooltip": {
    backgroundColor: "var(--surface)",
    color: "var(--text)",
    border: "1px solid var(--border)",
    maxWidth: "min(90vw, 36rem)",
  },
});

export interface SpecEditorProps {
  value: string;
  onChange(value: string): void;
  /** Each time the spec is checked (a moment after typing stops). */
  onDiagnostics(diagnostics: BatchSpecDiagnostic[], source: string): void;
}

/** The nonce of this page's Content Security Policy, which the server wrote into index.html. */
function pageNonce(): string {
  return document.querySelector<HTMLMetaElement>('meta[property="csp-nonce"]')?.nonce ?? "";
}

/** The spec editor; `value` may be replaced from outside (an example picked). */
export default function SpecEditor({ value, onChange, onDiagnostics }: SpecEditorProps) {
  const host = useRef<HTMLDivElement>(null);
  const view = useRef<EditorView | null>(null);
  const callbacks = useRef({ onChange, onDiagnostics });
  callbacks.current = { onChange, onDiagnostics };

  // biome-ignore lint/correctness/useExhaustiveDependencies: the view is made once; `value` is synced below.
  useEffect(() => {
    const schema = batchSpecJsonSchema() as Parameters<typeof stateExtensions>[0];
    const specLinter = linter(
      (editor) => {
        const source = editor.state.doc.toString();
        const diagnostics = validateSpec(source);
        callbacks.current.onDiagnostics(diagnostics, source);
        return diagnostics.map(
          (diagnostic): Diagnostic => ({
            ...rangeOf(editor.state.doc, diagnostic),
            severity: "error",
            source: diagnostic.path || undefined,
            message: diagnostic.message,
          }),
        );
      },
      { delay: 300 },
    );
    const created = new EditorView({
      parent: host.current!,
      state: EditorState.create({
        doc: value,
        extensions: [
          lineNumbers(),
          highlightActiveLineGutter(),
          highlightActiveLine(),
          history(),
          indentOnInput(),
          bracketMatching(),
          closeBrackets(),
          autocompletion(),
          lintGutter(),
          yaml(),
          yamlLanguage.data.of({ autocomplete: yamlCompletion() }),
          hoverTooltip(yamlSchemaHover()),
          stateExtensions(schema),
          specLinter,
          syntaxHighlighting(highlight),
          theme,
          EditorView.lineWrapping,
          // The editor adds its styles in a <style> element, which the page's Content Security
          // Policy allows only with the nonce the server gave this page.
          EditorView.cspNonce.of(pageNonce()),
          EditorView.contentAttributes.of({
            "aria-label": "Batch spec",
            "aria-multiline": "true",
            role: "textbox",
          }),
          keymap.of([
            ...closeBracketsKeymap,
            ...defaultKeymap,
            ...historyKeymap,
            ...completionKeymap,
            ...lintKeymap,
          ]),
          EditorView.updateListener.of((update) => {
            if (update.docChanged) callbacks.current.onChange(update.state.doc.toString());
          }),
        ],
      }),
    });
    view.current = created;
    return () => {
      created.destroy();
      view.current = null;
    };
  }, []);

  useEffect(() => {
    const current = view.current;
    if (!current) return;
    const text = current.state.doc.toString();
    if (text !== value) {
      current.dispatch({ changes: { from: 0, to: text.length, insert: value } });
    }
  }, [value]);

  return <div ref={host} className="spec-editor" />;
}
