import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type SseEvent, SseEventFilter, SseParser } from "./sse-parser.ts";

function parseAll(chunks: (string | Uint8Array)[]): SseEvent[] {
  const parser = new SseParser();
  const events = chunks.flatMap((chunk) => parser.push(chunk));
  return [...events, ...parser.end()];
}

describe("SseParser", () => {
  it("dispatches an event at each blank line with its name and data", () => {
    expect(parseAll(['event: ping\ndata: {"a":1}\n\ndata: two\n\n'])).toEqual([
      { event: "ping", data: '{"a":1}' },
      { event: "message", data: "two" },
    ]);
  });

  it("joins multi-line data with newlines and ignores comments and unknown fields", () => {
    expect(parseAll([": keep-alive\ndata: one\ndata:two\nretry: 5\nfoo: bar\n\n"])).toEqual([
      { event: "message", data: "one\ntwo" },
    ]);
  });

  it("accepts CRLF, CR and LF line endings, even a CRLF split across chunks", () => {
    expect(parseAll(["data: a\r", "\n\r", "\ndata: b\r\rdata: c\n\n"])).toEqual([
      { event: "message", data: "a" },
      { event: "message", data: "b" },
      { event: "message", data: "c" },
    ]);
  });

  it("drops a trailing event that never got its blank line", () => {
    expect(parseAll(["data: complete\n\ndata: cut off"])).toEqual([
      { event: "message", data: "complete" },
    ]);
  });

  it("keeps the id field", () => {
    expect(parseAll(["id: 7\ndata: x\n\n"])).toEqual([{ event: "message", data: "x", id: "7" }]);
  });

  it("gives the same events however the bytes are chunked (property)", () => {
    const field = fc
      .string({ unit: "grapheme", maxLength: 12 })
      .map((text) => text.replace(/[\r\n]/g, " "));
    const eventText = fc
      .record({
        name: fc.option(field, { nil: undefined }),
        lines: fc.array(fc.oneof(field, fc.constant('{"usage":2}')), {
          minLength: 1,
          maxLength: 3,
        }),
        comment: fc.boolean(),
        ending: fc.constantFrom("\n", "\r\n", "\r"),
      })
      .map(({ name, lines, comment, ending }) =>
        [
          ...(comment ? [": comment"] : []),
          ...(name === undefined ? [] : [`event: ${name}`]),
          ...lines.map((line) => `data: ${line}`),
          "",
          "",
        ].join(ending),
      );
    fc.assert(
      fc.property(
        fc.array(eventText, { maxLength: 6 }),
        fc.array(fc.nat(), { maxLength: 10 }),
        (events, cuts) => {
          const bytes = new TextEncoder().encode(events.join(""));
          const expected = parseAll([bytes]);
          const positions = [...new Set(cuts.map((cut) => cut % (bytes.length + 1)))].sort(
            (left, right) => left - right,
          );
          const chunks: Uint8Array[] = [];
          let start = 0;
          for (const position of [...positions, bytes.length]) {
            chunks.push(bytes.subarray(start, position));
            start = position;
          }
          expect(parseAll(chunks)).toEqual(expected);
          expect(expected).toHaveLength(events.length);
          const filter = new SseEventFilter('"usage"');
          const filtered = [...chunks.flatMap((chunk) => filter.push(chunk)), ...filter.end()];
          expect(filtered).toEqual(expected.filter((event) => event.data.includes('"usage"')));
        },
      ),
      { numRuns: 300 },
    );
  });

  it("finds every needle however the bytes are cut, near-misses and tiny chunks included (property)", () => {
    // Text made of the needles' own bytes, so partial matches, needles cut across one, two or
    // more chunks and needles next to event boundaries all come up often.
    const text = fc
      .array(fc.constantFrom('"', "u", "s", "a", "g", "e", '"usage', "usa", "ge", "x", " ", ":"), {
        maxLength: 12,
      })
      .map((parts) => parts.join(""));
    const eventText = fc
      .record({
        name: fc.option(text, { nil: undefined }),
        lines: fc.array(text, { minLength: 1, maxLength: 3 }),
      })
      .map(({ name, lines }) =>
        [
          ...(name === undefined ? [] : [`event: ${name}`]),
          ...lines.map((line) => `data: ${line}`),
          "",
          "",
        ].join("\n"),
      );
    fc.assert(
      fc.property(
        fc.array(eventText, { maxLength: 8 }),
        fc.array(fc.integer({ min: 1, max: 9 }), { maxLength: 40 }),
        fc.constantFrom('"usage', '"usage"', "g", "ge"),
        (events, sizes, needle) => {
          const bytes = new TextEncoder().encode(events.join(""));
          const chunks: Uint8Array[] = [];
          let start = 0;
          for (const size of sizes) {
            if (start >= bytes.length) break;
            chunks.push(bytes.subarray(start, start + size));
            start += size;
          }
          chunks.push(bytes.subarray(start));
          const filter = new SseEventFilter(needle);
          const filtered = [...chunks.flatMap((chunk) => filter.push(chunk)), ...filter.end()];
          expect(filtered).toEqual(
            parseAll([bytes]).filter((event) => event.data.includes(needle)),
          );
        },
      ),
      { numRuns: 1000 },
    );
  });

  it("finds usage in model-shaped streams cut anywhere, in Buffers and other byte arrays (property)", () => {
    // The four providers' events as they stream them, around text that holds the needle's pieces,
    // the needle itself inside string content (an escaped quote before it) and both spellings
    // of the key: `"usage"` and Gemini's `"usageMetadata"`, which must match one needle.
    const words = fc
      .array(fc.constantFrom("large", "usage", "age", "g", "e", '\\"usage', '\\"', "sage ", " "), {
        maxLength: 8,
      })
      .map((parts) => parts.join(""));
    const event = fc.oneof(
      words.map((text) => `data: {"choices":[{"delta":{"content":"${text}"}}]}\n\n`),
      words.map(
        (text) =>
          `event: response.output_text.delta\ndata: {"type":"response.output_text.delta","delta":"${text}"}\n\n`,
      ),
      fc.constant('data: {"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":7}}\n\n'),
      fc.constant(
        'event: message_delta\ndata: {"type":"message_delta","usage":{"output_tokens":15}}\n\n',
      ),
      words.map(
        (text) =>
          `data: {"candidates": [{"content": {"parts": [{"text": "${text}"}]}}], "usageMetadata": {"totalTokenCount": 9}}\n\n`,
      ),
    );
    fc.assert(
      fc.property(
        fc.array(event, { maxLength: 8 }),
        // Tiny chunks cut needles; larger ones hold whole events and the start of the next.
        fc.array(fc.oneof(fc.integer({ min: 1, max: 9 }), fc.integer({ min: 10, max: 300 })), {
          maxLength: 60,
        }),
        fc.boolean(),
        (events, sizes, asBuffers) => {
          const text = events.join("");
          // A Buffer chunk is a view into a larger pool, as Node's streams hand them over.
          const bytes = asBuffers
            ? Buffer.from(`padding${text}`).subarray("padding".length)
            : new TextEncoder().encode(text);
          const chunks: Uint8Array[] = [];
          let start = 0;
          for (const size of sizes) {
            if (start >= bytes.length) break;
            chunks.push(bytes.subarray(start, start + size));
            start += size;
          }
          chunks.push(bytes.subarray(start));
          const filter = new SseEventFilter('"usage');
          const filtered = [...chunks.flatMap((chunk) => filter.push(chunk)), ...filter.end()];
          expect(filtered).toEqual(
            parseAll([bytes]).filter((parsed) => parsed.data.includes('"usage')),
          );
        },
      ),
      { numRuns: 500 },
    );
  });

  it("finds a needle cut at each of its bytes, whether the event ends in that chunk or later", () => {
    const before = 'data: {"delta":"large"}\n\ndata: {"x":1,';
    for (const after of [
      '"usage":{"output_tokens":3}}\n\n',
      '"usageMetadata": {}}\n\ndata: {}\n\n',
    ]) {
      const text = before + after;
      const expected = parseAll([text]).filter((event) => event.data.includes('"usage'));
      expect(expected).toHaveLength(1);
      for (let cut = before.length - 1; cut <= before.length + 7; cut += 1) {
        for (const rest of [[text.slice(cut)], [text.slice(cut, cut + 9), text.slice(cut + 9)]]) {
          const filter = new SseEventFilter('"usage');
          const chunks = [text.slice(0, cut), ...rest].map((part) => Buffer.from(part));
          const filtered = [...chunks.flatMap((chunk) => filter.push(chunk)), ...filter.end()];
          expect(filtered).toEqual(expected);
        }
      }
    }
  });

  it("finds the needle in an event still arriving after one that ended with it in the same chunk", () => {
    const filter = new SseEventFilter('"usage');
    const chunks = ['data: {"usage":1}\n\ndata: {"usage":2,', '"x":0}\n\n'].map((part) =>
      Buffer.from(part),
    );
    expect([...chunks.flatMap((chunk) => filter.push(chunk)), ...filter.end()]).toEqual([
      { event: "message", data: '{"usage":1}' },
      { event: "message", data: '{"usage":2,"x":0}' },
    ]);
  });

  it("filters only the events that mention the needle, on LF and on CRLF streams", () => {
    for (const ending of ["\n", "\r\n"]) {
      const text = ["data: {}", "", "event: done", 'data: {"usage":1}', "", "data: tail", ""].join(
        ending,
      );
      const filter = new SseEventFilter('"usage"');
      const bytes = new TextEncoder().encode(text);
      const events = [
        ...filter.push(bytes.subarray(0, 7)),
        ...filter.push(bytes.subarray(7)),
        ...filter.end(),
      ];
      expect(events).toEqual([{ event: "done", data: '{"usage":1}' }]);
    }
  });
});

// The cases of the native model client's former decoder, which this parser replaced.
describe("SseParser on a model stream", () => {
  const bytes = (text: string) => new TextEncoder().encode(text);

  it("yields the same events however the bytes are cut: CRLF, lone CR, LF and UTF-8", () => {
    const stream = bytes(
      ': comment\r\nevent: response.created\r\ndata: {"a":"é"}\r\n\r\ndata: one\ndata: two\n\nevent: x\rdata: y\r\r',
    );
    const whole = parseAll([stream]);
    expect(whole).toEqual([
      { event: "response.created", data: '{"a":"é"}' },
      { event: "message", data: "one\ntwo" },
      { event: "x", data: "y" },
    ]);
    for (let cut = 1; cut < stream.length; cut += 1) {
      expect(parseAll([stream.subarray(0, cut), stream.subarray(cut)])).toEqual(whole);
    }
  });

  it("drops an event whose blank line never came, after dispatching the whole one", () => {
    const parser = new SseParser();
    expect(parser.push("data: whole\n\ndata: cut")).toEqual([{ event: "message", data: "whole" }]);
    expect(parser.end()).toEqual([]);
  });

  it("keeps each event's id, which the former decoder dropped", () => {
    expect(parseAll(["id: 7\nevent: response.created\ndata: {}\n\n"])).toEqual([
      { event: "response.created", data: "{}", id: "7" },
    ]);
  });
});
