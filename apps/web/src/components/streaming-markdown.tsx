import { marked } from "marked";
import { memo, useRef } from "react";
import ReactMarkdown from "react-markdown";
import remarkGfm from "remark-gfm";
import { CodeBlock } from "./code-block.tsx";

/** Fenced code gets highlighting and a copy button; everything else is react-markdown's. */
const COMPONENTS = { pre: CodeBlock };

/**
 * Markdown that streams without re-rendering everything: the text is split into top-level
 * blocks (marked's lexer knows where a code fence or list ends), each rendered by react-markdown
 * under memo. A new delta changes only the last block, so only it is parsed again.
 */
const Block = memo(function Block({ source }: { source: string }) {
  return (
    <ReactMarkdown remarkPlugins={[remarkGfm]} components={COMPONENTS}>
      {source}
    </ReactMarkdown>
  );
});

function lexBlocks(text: string): string[] {
  return marked.lexer(text).map((token) => token.raw);
}

/**
 * The blocks of `text`, given those of the text it grew from: every block but the last is
 * finished (another began after it), so only the text from the last block on is lexed again.
 * A 5,000-delta answer thus costs a short lex per frame rather than one of the whole answer.
 */
export function growBlocks(previous: { text: string; blocks: string[] }, text: string): string[] {
  if (previous.blocks.length < 2 || !text.startsWith(previous.text)) return lexBlocks(text);
  const finished = previous.blocks.slice(0, -1);
  const offset = finished.reduce((length, block) => length + block.length, 0);
  return [...finished, ...lexBlocks(text.slice(offset))];
}

export function StreamingMarkdown({ text }: { text: string }) {
  const last = useRef<{ text: string; blocks: string[] }>({ text: "", blocks: [] });
  if (last.current.text !== text || last.current.blocks.length === 0)
    last.current = { text, blocks: growBlocks(last.current, text) };
  const { blocks } = last.current;
  return (
    <div className="markdown">
      {blocks.map((block, index) => (
        // Blocks only grow at the end, so their index is a stable identity.
        // biome-ignore lint/suspicious/noArrayIndexKey: see above
        <Block key={index} source={block} />
      ))}
    </div>
  );
}
