import { type ReactNode, useEffect, useState } from "react";

/** What the lazily loaded chunk offers (lowlight-highlighter.ts). */
export interface Highlighter {
  knows: (language: string) => boolean;
  highlight: (code: string, language: string) => ReactNode;
}

let loading: Promise<Highlighter> | null = null;
let loaded: Highlighter | null = null;

/** Loads the highlighter's chunk once (it is not in the first visit's JavaScript). */
export function loadHighlighter(): Promise<Highlighter> {
  loading ??= import("./lowlight-highlighter.ts").then((module) => {
    loaded = { knows: module.knows, highlight: module.highlight };
    return loaded;
  });
  return loading;
}

/**
 * The highlighter once it has loaded, null until then (text shows plain meanwhile); asking for
 * it starts the load.
 */
export function useHighlighter(wanted = true): Highlighter | null {
  const [highlighter, setHighlighter] = useState<Highlighter | null>(loaded);
  useEffect(() => {
    if (!wanted || highlighter) return;
    let live = true;
    void loadHighlighter().then((ready) => live && setHighlighter(ready));
    return () => {
      live = false;
    };
  }, [wanted, highlighter]);
  return highlighter;
}

/** File extensions whose language name differs from the extension. */
const EXTENSION_LANGUAGE: Record<string, string> = {
  ts: "typescript",
  tsx: "typescript",
  mts: "typescript",
  cts: "typescript",
  js: "javascript",
  jsx: "javascript",
  mjs: "javascript",
  cjs: "javascript",
  py: "python",
  rb: "ruby",
  rs: "rust",
  go: "go",
  md: "markdown",
  yml: "yaml",
  yaml: "yaml",
  json: "json",
  sh: "bash",
  bash: "bash",
  zsh: "bash",
  css: "css",
  scss: "scss",
  html: "xml",
  xml: "xml",
  kt: "kotlin",
  java: "java",
  c: "c",
  h: "c",
  cc: "cpp",
  cpp: "cpp",
  hpp: "cpp",
  cs: "csharp",
  php: "php",
  sql: "sql",
  swift: "swift",
  toml: "ini",
  ini: "ini",
  lua: "lua",
  pl: "perl",
  r: "r",
};

/** The language a file's name suggests (`src/app.ts` → typescript), or null. */
export function languageOfPath(path: string): string | null {
  const name = path.split("/").at(-1) ?? "";
  if (/^dockerfile$/i.test(name)) return "dockerfile";
  if (/^makefile$/i.test(name)) return "makefile";
  const extension = /\.([^.]+)$/.exec(name)?.[1]?.toLowerCase();
  return extension ? (EXTENSION_LANGUAGE[extension] ?? null) : null;
}
