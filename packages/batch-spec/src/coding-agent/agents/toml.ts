/**
 * A TOML basic string. Codex parses each `-c key=value` value as TOML (and falls back to a
 * bare string only when that fails), so URLs and model names are passed as explicit strings.
 */
export function tomlString(value: string): string {
  let result = '"';
  for (const character of value) {
    const code = character.codePointAt(0)!;
    if (character === '"') result += '\\"';
    else if (character === "\\") result += "\\\\";
    else if (code < 0x20 || code === 0x7f) result += `\\u${code.toString(16).padStart(4, "0")}`;
    else result += character;
  }
  return `${result}"`;
}
