import { describe, expect, it } from "vitest";
import { SseDecoder } from "./sse-decoder.ts";

const bytes = (text: string) => new TextEncoder().encode(text);

describe("SseDecoder", () => {
  it("yields the same events however the bytes are cut", () => {
    const stream = bytes(
      ': comment\r\nevent: response.created\r\ndata: {"a":"é"}\r\n\r\ndata: one\ndata: two\n\nevent: x\rdata: y\r\r',
    );
    const decoder = new SseDecoder();
    const whole = [...decoder.push(stream), ...decoder.end()];
    expect(whole).toEqual([
      { event: "response.created", data: '{"a":"é"}' },
      { event: "message", data: "one\ntwo" },
      { event: "x", data: "y" },
    ]);
    for (let cut = 1; cut < stream.length; cut += 1) {
      const decoder = new SseDecoder();
      const events = [
        ...decoder.push(stream.subarray(0, cut)),
        ...decoder.push(stream.subarray(cut)),
        ...decoder.end(),
      ];
      expect(events).toEqual(whole);
    }
  });

  it("drops an event whose blank line never came", () => {
    const decoder = new SseDecoder();
    expect(decoder.push("data: whole\n\ndata: cut")).toEqual([{ event: "message", data: "whole" }]);
    expect(decoder.end()).toEqual([]);
  });
});
