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
