// codemirror-json-schema renders the schema's descriptions (completion info, hover, lint
// messages) with markdown-it and shiki, which would triple the spec editor's size. The Vite config
// points its `utils/markdown` module here instead: the same function over marked, which the UI
// already bundles. The text is the batch spec schema's own descriptions, not user input.
import { marked } from "marked";

export function renderMarkdown(markdown: string, inline = true): string {
  return inline
    ? (marked.parseInline(markdown, { async: false }) as string)
    : (marked.parse(markdown, { async: false }) as string);
}
