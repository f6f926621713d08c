/** Formats one server-sent event; a string is sent as is, anything else as JSON. */
export function sseEvent(data: unknown, event?: string): string {
  const text = typeof data === "string" ? data : JSON.stringify(data);
  return `${event ? `event: ${event}\n` : ""}data: ${text}\n\n`;
}

/**
 * Cuts text into word-sized deltas that join back to exactly the text, so a client that
 * forgets to concatenate (or concatenates twice) is caught.
 */
export function textDeltas(text: string): string[] {
  return text
    .split(" ")
    .map((word, index) => (index === 0 ? word : ` ${word}`))
    .filter((piece) => piece.length > 0);
}

/** Cuts tool arguments into small pieces, as providers stream them mid-token. */
export function argumentDeltas(text: string, size = 8): string[] {
  const pieces: string[] = [];
  for (let start = 0; start < text.length; start += size)
    pieces.push(text.slice(start, start + size));
  return pieces;
}
