import { describe, expect, it } from "vitest";
import { messageWithReviewComments } from "./review-comments.tsx";

describe("messageWithReviewComments", () => {
  const comments = [
    { id: "1", path: "src/a.ts", line: 3, removed: false, text: "name this\nbetter" },
    { id: "2", path: "b.txt", line: 7, removed: true, text: "keep this line" },
  ];

  it("quotes each comment as path:line, each a quote of its own, before the message", () => {
    expect(messageWithReviewComments("please fix", comments)).toBe(
      [
        "Review comments:",
        "",
        "> src/a.ts:3 — name this",
        "> better",
        "",
        "> b.txt:7 (removed line) — keep this line",
        "",
        "please fix",
      ].join("\n"),
    );
  });

  it("sends the comments alone when nothing else was written, and the text alone without them", () => {
    expect(messageWithReviewComments("  ", comments.slice(0, 1))).toBe(
      "Review comments:\n\n> src/a.ts:3 — name this\n> better",
    );
    expect(messageWithReviewComments("just text", [])).toBe("just text");
  });
});
