import { marked } from "marked";
import { memo, useMemo } from "react";
import ReactMarkdown from "react-markdown";
import remarkGfm from "remark-gfm";

/**
 * Markdown that streams without re-rendering everything: the text is split into top-level
 * blocks (marked's lexer knows where a code fence or list ends), each rendered by react-markdown
 * under memo. A new delta changes only the last block, so only it is parsed again.
 */
const Block = memo(function Block({ source }: { source: string }) {
  return <ReactMarkdown remarkPlugins={[remarkGfm]}>{source}</ReactMarkdown>;
});

export function StreamingMarkdown({ text }: { text: string }) {
  const blocks = useMemo(() => marked.lexer(text).map((token) => token.raw), [text]);
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
