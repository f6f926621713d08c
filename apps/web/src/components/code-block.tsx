import { type ReactNode, useState } from "react";
import { useHighlighter } from "../highlight/highlighter.ts";

/** Copies `text`, saying so on the button for a moment. */
export function CopyButton({ text, label }: { text: string; label: string }) {
  const [copied, setCopied] = useState(false);
  return (
    <button
      type="button"
      className="copy-button"
      aria-label={copied ? "Copied" : label}
      onClick={() => {
        void navigator.clipboard?.writeText(text).then(() => {
          setCopied(true);
          setTimeout(() => setCopied(false), 1_500);
        });
      }}
    >
      {copied ? "Copied" : "Copy"}
    </button>
  );
}

/** The code of a react-markdown `<pre>`'s `<code>` child: its text and its fence's language. */
function codeOf(children: ReactNode): { text: string; language: string | null } {
  const child = Array.isArray(children) ? children[0] : children;
  const props = (child as { props?: { className?: string; children?: ReactNode } } | null)?.props;
  const language = /language-([\w+#-]+)/.exec(props?.className ?? "")?.[1] ?? null;
  const text = String(props?.children ?? "").replace(/\n$/, "");
  return { text, language };
}

/**
 * A fenced code block in a message: highlighted in its fence's language once the highlighter
 * has loaded (plain until then), with a copy button.
 */
export function CodeBlock({ children }: { children?: ReactNode }) {
  const { text, language } = codeOf(children);
  const highlighter = useHighlighter(language !== null);
  const highlighted =
    highlighter && language && highlighter.knows(language)
      ? highlighter.highlight(text, language)
      : null;
  return (
    <div className="code-block">
      <div className="code-block-bar">
        <span className="muted">{language ?? "text"}</span>
        <CopyButton text={text} label={`Copy ${language ?? "code"}`} />
      </div>
      <pre>
        <code className={`hljs${language ? ` language-${language}` : ""}`}>
          {highlighted ?? text}
        </code>
      </pre>
    </div>
  );
}
