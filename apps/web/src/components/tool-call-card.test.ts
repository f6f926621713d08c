import type { ToolCallPartContent } from "@deckhand/wire";
import { createElement } from "react";
import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import { formatDuration, ToolCallCard, truncationNote } from "./tool-call-card.tsx";

const render = (content: ToolCallPartContent) =>
  renderToStaticMarkup(createElement(ToolCallCard, { content }));

describe("ToolCallCard", () => {
  it("draws a command with its cwd, exit code, duration, output and what the agent cut", () => {
    const html = render({
      tool_call_id: "call-1",
      kind: "execute",
      status: "completed",
      title: "make test",
      input: { command: "make test", cwd: "/work/repo" },
      output: {
        output: "ok\n",
        exit_code: 2,
        wall_duration_ms: 1530,
        truncated: { original_bytes: 90000, retained_bytes: 20000, omitted_bytes: 70000 },
      },
    });
    expect(html).toContain("make test");
    expect(html).toContain("<dd>/work/repo</dd>");
    expect(html).toContain("<dd>2</dd>");
    expect(html).toContain("<dd>1.5 s</dd>");
    expect(html).toContain("70,000 of 90,000 bytes omitted from the middle");
  });

  it("draws a read with its line window and the text", () => {
    const html = render({
      tool_call_id: "call-2",
      kind: "read",
      status: "completed",
      title: "Read src/app.ts",
      locations: ["src/app.ts"],
      output: { content: "export {};\n", offset: 11, lines: 20, total_lines: 300 },
    });
    expect(html).toContain("lines 11–30 of 300");
    expect(html).toContain('<pre class="output">export {};');
  });

  it("draws a search with its query, scope and matches", () => {
    const html = render({
      tool_call_id: "call-3",
      kind: "search",
      status: "completed",
      title: "Search TODO",
      input: { pattern: "TODO", path: "src" },
      content: "src/a.ts:3: // TODO",
    });
    expect(html).toContain("<code>TODO</code>");
    expect(html).toContain("<dd>src</dd>");
    expect(html).toContain("src/a.ts:3: // TODO");
  });

  it("falls back to the input and output of any other kind", () => {
    const html = render({
      tool_call_id: "call-4",
      kind: "fetch",
      title: "Fetch https://example.org",
      input: { url: "https://example.org" },
      content: "<html>",
    });
    expect(html).toContain("pending");
    expect(html).toContain("<summary>Input</summary>");
    expect(html).toContain("&lt;html&gt;");
  });
});

describe("formatDuration and truncationNote", () => {
  it("say milliseconds below a second and seconds above, and name what was cut", () => {
    expect(formatDuration(340)).toBe("340 ms");
    expect(formatDuration(61_000)).toBe("61.0 s");
    expect(truncationNote(true)).toBe("output truncated by the agent");
    expect(truncationNote(null)).toBeUndefined();
  });
});
