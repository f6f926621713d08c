// The syntax highlighter itself: lowlight (highlight.js's grammars, as a syntax tree rather than
// an HTML string) turned into React elements with hast-util-to-jsx-runtime. No HTML is parsed
// or injected, and the colours are classes (`hljs-keyword`, …) themed in styles.css, so it runs
// under a Content-Security-Policy without inline scripts. Loaded on first use, in its own chunk.
import { toJsxRuntime } from "hast-util-to-jsx-runtime";
import { common, createLowlight } from "lowlight";
import type { ReactNode } from "react";
import { Fragment, jsx, jsxs } from "react/jsx-runtime";

const lowlight = createLowlight(common);

/** Whether the highlighter knows `language` (a name or an alias such as `ts`, `sh`). */
export function knows(language: string): boolean {
  return lowlight.registered(language);
}

/** `code` as highlighted React elements in `language`, or null when it is not one it knows. */
export function highlight(code: string, language: string): ReactNode {
  if (!lowlight.registered(language)) return null;
  const tree = lowlight.highlight(language, code);
  return toJsxRuntime(tree, { Fragment, jsx, jsxs });
}
