import { describe, expect, it } from "vitest";
import { parseShellScript, tokenizeShell, withoutTrailingBackground } from "./shell-words.ts";

function words(command: string): string[] {
  return parseShellScript(command).commands.flatMap((part) => part.words.map((word) => word.text));
}

describe("tokenizeShell", () => {
  it("removes quotes and escapes the way sh does", () => {
    expect(words(`echo 'a b' "c \\"d\\" \\$e \\x" f\\ g h'i'"j"`)).toEqual([
      "echo",
      "a b",
      'c "d" $e \\x',
      "f g",
      "hij",
    ]);
  });

  it("joins lines continued with a backslash and drops comments", () => {
    expect(words("ls \\\n -la # list it")).toEqual(["ls", "-la"]);
    expect(words("echo a#b")).toEqual(["echo", "a#b"]);
  });

  it("splits on control operators and keeps them in order", () => {
    const script = parseShellScript("a && b || c; d | e\nf & g");
    expect(script.commands.map((part) => part.words[0]!.text)).toEqual([
      "a",
      "b",
      "c",
      "d",
      "e",
      "f",
      "g",
    ]);
    expect(script.operators).toEqual(["&&", "||", ";", "|", "\n", "&"]);
  });

  it("flags expansions, substitutions and globs", () => {
    const [command] = parseShellScript(`echo $HOME "\${X}" $(date) \`id\` *.ts "*.md"`).commands;
    const flags = command!.words
      .slice(1)
      .map((word) => [word.expands, word.substitutes, word.glob]);
    expect(flags).toEqual([
      [true, false, false],
      [true, false, false],
      [false, true, false],
      [false, true, false],
      [false, false, true],
      [false, false, false],
    ]);
  });

  it("reads redirections with their descriptors and targets", () => {
    const [command] = parseShellScript("cmd 2>&1 >out.txt <in 2>/dev/null").commands;
    expect(
      command!.redirections.map((redirection) => [
        redirection.fd,
        redirection.operator,
        redirection.target?.text,
      ]),
    ).toEqual([
      [2, ">&", "1"],
      [null, ">", "out.txt"],
      [null, "<", "in"],
      [2, ">", "/dev/null"],
    ]);
  });

  it("reports what it cannot follow instead of throwing", () => {
    expect(tokenizeShell("echo 'open").error).toMatch(/unterminated ' quote/);
    expect(tokenizeShell('echo "open').error).toMatch(/unterminated " quote/);
    expect(tokenizeShell("cat <<EOF\nx\nEOF").error).toMatch(/here-documents/);
    expect(tokenizeShell("echo $(date").error).toMatch(/unterminated/);
    expect(parseShellScript("(cd x && ls)").unsupported).toContain("subshell");
  });

  it("treats leading NAME=value words as assignments", () => {
    const [command] = parseShellScript("FOO=1 BAR='x y' env a=b").commands;
    expect(command!.assignments.map((word) => word.text)).toEqual(["FOO=1", "BAR=x y"]);
    expect(command!.words.map((word) => word.text)).toEqual(["env", "a=b"]);
  });
});

describe("withoutTrailingBackground", () => {
  it.each([
    ["sleep 10 &", "sleep 10"],
    ["npm run dev  &  ", "npm run dev"],
    ["server 2>&1 &", "server 2>&1"],
    ["a && b &", "a && b"],
  ])("promotes %j", (command, expected) => {
    expect(withoutTrailingBackground(command)).toBe(expected);
  });

  it.each([
    "a && b",
    "echo '&'",
    'echo "x &"',
    "echo \\&",
    "sleep 1 # &",
    "&",
    "echo 'unterminated &",
    "a & b",
  ])("leaves %j alone", (command) => {
    expect(withoutTrailingBackground(command)).toBeNull();
  });
});
