/**
 * Typographic characters models tend to substitute for their ASCII cousins (and vice versa);
 * Codex's last matching pass compares through this mapping.
 */
function normalizePunctuation(text: string): string {
  let result = "";
  for (const character of text.trim()) {
    const code = character.codePointAt(0)!;
    if ((code >= 0x2010 && code <= 0x2015) || code === 0x2212) result += "-";
    else if (code >= 0x2018 && code <= 0x201b) result += "'";
    else if (code >= 0x201c && code <= 0x201f) result += '"';
    else if (
      code === 0x00a0 ||
      (code >= 0x2002 && code <= 0x200a) ||
      code === 0x202f ||
      code === 0x205f ||
      code === 0x3000
    ) {
      result += " ";
    } else result += character;
  }
  return result;
}

/** Comparisons from strictest to loosest; the first that finds the pattern wins. */
const PASSES: ReadonlyArray<(text: string) => string> = [
  (text) => text,
  (text) => text.trimEnd(),
  (text) => text.trim(),
  normalizePunctuation,
];

/**
 * Where `pattern` occurs in `lines` at or after `start`, as Codex's seek_sequence finds it:
 * exact first, then ignoring trailing whitespace, then ignoring surrounding whitespace, then
 * also treating typographic dashes, quotes and spaces as ASCII. With `endOfFile` only the
 * position that ends at the last line is tried. Null when nothing matches.
 */
export function seekSequence(
  lines: readonly string[],
  pattern: readonly string[],
  start: number,
  endOfFile: boolean,
): number | null {
  if (pattern.length === 0) return start;
  if (pattern.length > lines.length) return null;
  const from = endOfFile ? lines.length - pattern.length : start;
  const last = lines.length - pattern.length;
  for (const normalize of PASSES) {
    const wanted = pattern.map(normalize);
    for (let index = from; index <= last; index += 1) {
      let matches = true;
      for (let offset = 0; offset < wanted.length; offset += 1) {
        if (normalize(lines[index + offset]!) !== wanted[offset]) {
          matches = false;
          break;
        }
      }
      if (matches) return index;
    }
  }
  return null;
}
