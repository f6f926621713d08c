import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { BatchesError } from "./batches-error.ts";
import { parseRepositoryQuery } from "./repository-query.ts";

function parseError(query: string): BatchesError {
  try {
    parseRepositoryQuery(query);
  } catch (error) {
    expect(BatchesError.isInstance(error)).toBe(true);
    return error as BatchesError;
  }
  throw new Error(`"${query}" parsed`);
}

describe("parseRepositoryQuery", () => {
  it("reads repo:, -repo:, file:, -file: and a literal content pattern", () => {
    const query = parseRepositoryQuery(
      String.raw`repo:^github\.com/acme/ -repo:legacy file:\.go$ -file:_test\.go$ fmt.Println( count:all`,
    );
    expect(query).toEqual({
      repositories: [
        { pattern: String.raw`^github\.com/acme/`, negated: false },
        { pattern: "legacy", negated: true },
      ],
      files: [
        { pattern: String.raw`\.go$`, negated: false },
        { pattern: String.raw`_test\.go$`, negated: true },
      ],
      content: [{ text: "fmt.Println(", regexp: false }],
      patternType: "keyword",
      caseSensitive: false,
      selectRepository: false,
      warnings: [],
    });
  });

  it("keyword (the default) makes each word a pattern; quotes keep a phrase; /.../ is a regexp", () => {
    const query = parseRepositoryQuery(
      String.raw`new  Client(  file:x "a  b" content:'c d' /x\d+/`,
    );
    expect(query.content).toEqual([
      { text: "new", regexp: false },
      { text: "Client(", regexp: false },
      { text: "a  b", regexp: false },
      { text: "c d", regexp: false },
      { text: String.raw`x\d+`, regexp: true },
    ]);
  });

  it("standard and literal join the words into one literal; literal reads /.../ as text", () => {
    const standard = parseRepositoryQuery("new  Client( /x+/", { defaultPatternType: "standard" });
    expect(standard.content).toEqual([
      { text: "new Client(", regexp: false },
      { text: "x+", regexp: true },
    ]);
    expect(parseRepositoryQuery("patterntype:literal new Client( /x+/").content).toEqual([
      { text: "new Client( /x+/", regexp: false },
    ]);
  });

  it("regexp joins the words with .* and keeps a quoted phrase literal", () => {
    const query = parseRepositoryQuery(String.raw`patterntype:regexp foo\d bar "a.b" content:c+`);
    expect(query.content).toEqual([
      { text: String.raw`foo\d.*bar`, regexp: true },
      { text: "a.b", regexp: false },
      { text: "c+", regexp: true },
    ]);
  });

  it("reads patterntype:regexp, case:yes, select:repo, context:global and the r:/f: aliases", () => {
    const query = parseRepositoryQuery(
      String.raw`r:api f:\.ts$ patterntype:regexp case:yes select:repo context:global foo\d+`,
    );
    expect(query).toMatchObject({
      repositories: [{ pattern: "api", negated: false }],
      files: [{ pattern: String.raw`\.ts$`, negated: false }],
      content: [{ text: String.raw`foo\d+`, regexp: true }],
      patternType: "regexp",
      caseSensitive: true,
      selectRepository: true,
    });
  });

  it("accepts fork: and archived: yes/no with a warning, since no code host knows", () => {
    const query = parseRepositoryQuery("repo:api fork:yes archived:no");
    expect(query.warnings).toEqual([
      expect.stringContaining("fork:yes is ignored"),
      expect.stringContaining("archived:no is ignored"),
    ]);
    expect(parseError("fork:only").message).toContain(
      "fork:only is not supported by Deckhand's code hosts",
    );
  });

  it("refuses a filter outside the subset by name", () => {
    const error = parseError("type:diff repo:api");
    expect(error.code).toBe("invalid_query");
    expect(error.message).toContain("the filter type: is not supported");
    expect(parseError("lang:go fmt").message).toContain("the filter lang: is not supported");
    expect(parseError("repo:api@main").message).toContain("a revision in repo:api@main");
    expect(parseError("repo:has.file(path:x)").message).toContain("the predicate");
    expect(parseError("a or b").message).toContain('the operator or parenthesis "or"');
    expect(parseError("(a b)").message).toContain("parenthesis");
    expect(parseError("patterntype:structural x").message).toContain("patterntype:structural");
    expect(parseError("select:file x").message).toContain("only select:repo");
  });

  it("refuses malformed parts with what to fix", () => {
    expect(parseError("repo:(").message).toContain("repo:( is not a valid regular expression");
    expect(parseError('"open').message).toContain("is never closed");
    expect(parseError("repo:").message).toContain("needs a pattern");
    expect(parseError("count:many").message).toContain("count: takes all or a number");
  });

  it("a quoted value keeps its backslashes except before the quote or a backslash", () => {
    const query = parseRepositoryQuery('repo:"^github\\.com/a b" "say \\"hi\\" \\\\ \\n"');
    expect(query.repositories).toEqual([{ pattern: "^github\\.com/a b", negated: false }]);
    expect(query.content).toEqual([{ text: 'say "hi" \\ \\n', regexp: false }]);
  });

  it("treats a word with a colon that is no Sourcegraph field as text", () => {
    expect(parseRepositoryQuery("http://example.com").content).toEqual([
      { text: "http://example.com", regexp: false },
    ]);
  });
});

const word = fc
  .stringMatching(/^[a-z][a-z0-9_]{0,8}$/)
  .filter((text) => !["and", "or", "not"].includes(text));
const regexpText = fc.constantFrom(
  "api",
  String.raw`^github\.com/`,
  String.raw`\.go$`,
  "a|b",
  "x.*y",
);
const term = fc.oneof(
  fc.record({ kind: fc.constant("repo" as const), negated: fc.boolean(), pattern: regexpText }),
  fc.record({ kind: fc.constant("file" as const), negated: fc.boolean(), pattern: regexpText }),
  fc.record({ kind: fc.constant("word" as const), negated: fc.constant(false), pattern: word }),
);

describe("parseRepositoryQuery properties", () => {
  it("reads back every filter of a generated query, in order", () => {
    fc.assert(
      fc.property(fc.array(term, { maxLength: 8 }), (terms) => {
        const text = terms
          .map((t) =>
            t.kind === "word" ? t.pattern : `${t.negated ? "-" : ""}${t.kind}:${t.pattern}`,
          )
          .join(" ");
        const query = parseRepositoryQuery(text, { defaultPatternType: "standard" });
        const expected = (kind: "repo" | "file") =>
          terms
            .filter((t) => t.kind === kind)
            .map(({ pattern, negated }) => ({ pattern, negated }));
        expect(query.repositories).toEqual(expected("repo"));
        expect(query.files).toEqual(expected("file"));
        const words = terms.filter((t) => t.kind === "word").map((t) => t.pattern);
        expect(query.content).toEqual(
          words.length > 0 ? [{ text: words.join(" "), regexp: false }] : [],
        );
      }),
    );
  });

  it("either parses or throws an invalid_query BatchesError, for any text", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 60 }), (text) => {
        try {
          parseRepositoryQuery(text);
        } catch (error) {
          expect(BatchesError.isInstance(error)).toBe(true);
          expect((error as BatchesError).code).toBe("invalid_query");
        }
      }),
      { numRuns: 500 },
    );
  });
});
