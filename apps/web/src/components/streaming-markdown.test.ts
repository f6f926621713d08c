import { marked } from "marked";
import { describe, expect, it } from "vitest";
import { growBlocks } from "./streaming-markdown.tsx";

const blocksOf = (text: string) => marked.lexer(text).map((token) => token.raw);

describe("growBlocks", () => {
  it("gives the blocks a whole lex gives, however the text grew", () => {
    const text = [
      "# Title\n\n",
      "Some **bold** text\nover two lines.\n\n",
      "- one\n- two\n\n",
      "```ts\nconst a = 1;\n\nconst b = 2;\n```\n\n",
      "| a | b |\n| - | - |\n| 1 | 2 |\n\n",
      "The end.",
    ].join("");
    for (const step of [1, 3, 7, 16]) {
      let state = { text: "", blocks: [] as string[] };
      for (let length = step; length < text.length + step; length += step) {
        const next = text.slice(0, Math.min(length, text.length));
        state = { text: next, blocks: growBlocks(state, next) };
        expect(state.blocks).toEqual(blocksOf(next));
      }
    }
  });

  it("lexes again from scratch when the text was replaced rather than extended", () => {
    const first = { text: "one\n\ntwo", blocks: blocksOf("one\n\ntwo") };
    expect(growBlocks(first, "other\n\ntext")).toEqual(blocksOf("other\n\ntext"));
  });
});
