import type { Truncation } from "@deckhand/wire";

/** The most command output one tool result gives the model. */
export const MODEL_OUTPUT_MAX_BYTES = 32 * 1024;

/** How output was shortened on its way to the model; null when it was not. */
export interface OutputTruncation {
  /** Bytes the process wrote. */
  original_bytes: number;
  /** Bytes left out: by the workspace agent's buffer and by the cap for the model together. */
  omitted_bytes: number;
}

function isContinuation(byte: number | undefined): boolean {
  return byte !== undefined && (byte & 0xc0) === 0x80;
}

/**
 * Keeps the head and the tail of `text` within `maxBytes` of UTF-8, cut on character
 * boundaries, with a marker saying how many bytes were left out between them.
 */
export function capOutput(
  text: string,
  maxBytes = MODEL_OUTPUT_MAX_BYTES,
): { text: string; omittedBytes: number } {
  const bytes = Buffer.from(text, "utf8");
  if (bytes.length <= maxBytes) return { text, omittedBytes: 0 };
  const markerFor = (omitted: number) => `\n... [${omitted} bytes omitted] ...\n`;
  const budget = Math.max(0, maxBytes - Buffer.byteLength(markerFor(bytes.length)));
  let headEnd = Math.floor(budget / 2);
  while (headEnd > 0 && isContinuation(bytes[headEnd])) headEnd -= 1;
  let tailStart = bytes.length - (budget - Math.floor(budget / 2));
  while (tailStart < bytes.length && isContinuation(bytes[tailStart])) tailStart += 1;
  const omittedBytes = tailStart - headEnd;
  return {
    text: `${bytes.subarray(0, headEnd).toString("utf8")}${markerFor(omittedBytes)}${bytes.subarray(tailStart).toString("utf8")}`,
    omittedBytes,
  };
}

/** Caps process output for the model and merges what the agent already cut with what this cut. */
export function outputForModel(
  output: string,
  agentTruncation: Truncation | null,
): { output: string; truncated: OutputTruncation | null } {
  const capped = capOutput(output);
  const agentOmitted = agentTruncation?.omitted_bytes ?? 0;
  if (capped.omittedBytes === 0 && agentOmitted === 0) {
    return { output: capped.text, truncated: null };
  }
  return {
    output: capped.text,
    truncated: {
      original_bytes: agentTruncation?.original_bytes ?? Buffer.byteLength(output, "utf8"),
      omitted_bytes: agentOmitted + capped.omittedBytes,
    },
  };
}

/** Bytes `text` takes inside a JSON string literal, quotes left out. */
function jsonStringBytes(text: string): number {
  return Buffer.byteLength(JSON.stringify(text), "utf8") - 2;
}

/**
 * capOutput sized by what the text takes once escaped into JSON, where a newline or a quote
 * takes two bytes and a control character six: the cap is tightened until the escaped text fits.
 */
export function capForJson(
  text: string,
  maxJsonBytes: number,
): { text: string; omittedBytes: number } {
  let rawLimit = maxJsonBytes;
  for (;;) {
    const capped = capOutput(text, rawLimit);
    const size = jsonStringBytes(capped.text);
    if (size <= maxJsonBytes || rawLimit === 0) return capped;
    // Escapes are spread unevenly between head and tail, so aim a little under the ratio.
    rawLimit = Math.max(
      0,
      Math.min(rawLimit - 1, Math.floor((rawLimit * maxJsonBytes) / size) - 16),
    );
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** `truncated` of a result whose output lost `extra` more bytes on its way into JSON. */
function withMoreOmitted(previous: unknown, output: string, extra: number): OutputTruncation {
  if (
    isRecord(previous) &&
    typeof previous.original_bytes === "number" &&
    typeof previous.omitted_bytes === "number"
  ) {
    return {
      original_bytes: previous.original_bytes,
      omitted_bytes: previous.omitted_bytes + extra,
    };
  }
  return { original_bytes: Buffer.byteLength(output, "utf8"), omitted_bytes: extra };
}

/**
 * The text a tool result goes to the model as: its JSON, at most `maxBytes` of valid UTF-8 in
 * all. Escaping can make the JSON of a 32 KiB `output` much larger than 32 KiB (control
 * characters take six bytes each), so when the whole is too big the `output` field is cut
 * further, head and tail kept, with `truncated` counting the extra bytes left out. A result
 * that still does not fit (no `output` to cut) is cut as text, head and tail kept.
 */
export function toolResultText(result: unknown, maxBytes = MODEL_OUTPUT_MAX_BYTES): string {
  const json = JSON.stringify(result) ?? "null";
  if (Buffer.byteLength(json, "utf8") <= maxBytes) return json;
  if (isRecord(result) && typeof result.output === "string") {
    const output = result.output;
    const hasTruncated = "truncated" in result;
    // Room for the rest of the result, with the widest `truncated` it may end up with.
    const envelope = JSON.stringify({
      ...result,
      output: "",
      ...(hasTruncated
        ? { truncated: withMoreOmitted(result.truncated, output, Number.MAX_SAFE_INTEGER) }
        : {}),
    });
    const room = maxBytes - Buffer.byteLength(envelope, "utf8");
    if (room > 0) {
      const capped = capForJson(output, room);
      const fitted = JSON.stringify({
        ...result,
        output: capped.text,
        ...(hasTruncated
          ? { truncated: withMoreOmitted(result.truncated, output, capped.omittedBytes) }
          : {}),
      });
      if (Buffer.byteLength(fitted, "utf8") <= maxBytes) return fitted;
    }
  }
  return capOutput(json, maxBytes).text;
}
