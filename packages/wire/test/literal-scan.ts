import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import ts from "typescript";
import { wireConstants } from "../src/contract.ts";

export interface WireLiteral {
  /** Where the constant lives, e.g. `env.chatId`. */
  name: string;
  value: string;
  /** Header names are matched case-insensitively, as HTTP treats them. */
  caseInsensitive: boolean;
  /** Paths also match literals that extend them (`/api/v0/processes/start`). */
  prefix: boolean;
}

export interface LiteralFinding {
  file: string;
  line: number;
  column: number;
  literal: string;
  constant: string;
}

/** Every string constant of the wire contract, flattened. */
export function wireLiterals(): WireLiteral[] {
  const literals: WireLiteral[] = [];
  const visit = (prefix: string, value: unknown, group: string) => {
    if (typeof value === "string") {
      literals.push({
        name: prefix,
        value,
        caseInsensitive: group === "headers",
        prefix: group === "paths",
      });
    } else if (value && typeof value === "object") {
      for (const [key, inner] of Object.entries(value)) visit(`${prefix}.${key}`, inner, group);
    }
  };
  for (const [group, value] of Object.entries(wireConstants)) visit(group, value, group);
  // Longest first, so a literal is attributed to the most specific constant it extends.
  return literals.sort((left, right) => right.value.length - left.value.length);
}

const SOURCE_FILE = /\.(?:[cm]?ts|tsx|[cm]?js|jsx)$/;
const SKIPPED_DIRECTORIES = new Set(["node_modules", "dist", ".turbo", "coverage", ".git"]);

function listSourceFiles(directory: string, skip: (path: string) => boolean): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(directory)) {
    const path = join(directory, entry);
    if (SKIPPED_DIRECTORIES.has(entry) || skip(path)) continue;
    const stats = statSync(path);
    if (stats.isDirectory()) files.push(...listSourceFiles(path, skip));
    else if (SOURCE_FILE.test(entry)) files.push(path);
  }
  return files;
}

function matches(text: string, literal: WireLiteral): boolean {
  const candidate = literal.caseInsensitive ? text.toLowerCase() : text;
  const value = literal.caseInsensitive ? literal.value.toLowerCase() : literal.value;
  if (candidate === value) return true;
  return literal.prefix && candidate.startsWith(`${value}/`);
}

/** String and template literal texts in a file, with positions; comments are not literals. */
interface Token {
  text: string;
  position: number;
  identifier?: boolean;
}

function stringLiterals(text: string): Token[] {
  const scanner = ts.createScanner(ts.ScriptTarget.Latest, true, ts.LanguageVariant.Standard, text);
  const found: Token[] = [];
  // The scanner alone cannot tell a `}` closing a template's `${` from one closing a block,
  // so keep a stack of open braces and template substitutions.
  const braces: ("block" | "template")[] = [];
  for (let kind = scanner.scan(); kind !== ts.SyntaxKind.EndOfFileToken; kind = scanner.scan()) {
    if (kind === ts.SyntaxKind.OpenBraceToken) braces.push("block");
    if (kind === ts.SyntaxKind.CloseBraceToken && braces.pop() === "template") {
      kind = scanner.reScanTemplateToken(false);
    }
    switch (kind) {
      case ts.SyntaxKind.TemplateHead:
      case ts.SyntaxKind.TemplateMiddle:
        braces.push("template");
        found.push({ text: scanner.getTokenValue(), position: scanner.getTokenStart() });
        break;
      case ts.SyntaxKind.StringLiteral:
      case ts.SyntaxKind.NoSubstitutionTemplateLiteral:
      case ts.SyntaxKind.TemplateTail:
        found.push({ text: scanner.getTokenValue(), position: scanner.getTokenStart() });
        break;
      case ts.SyntaxKind.Identifier:
        // `env: { DECKHAND_CHAT_ID: value }` spells an env name as a property key.
        found.push({
          text: scanner.getTokenText(),
          position: scanner.getTokenStart(),
          identifier: true,
        });
        break;
    }
  }
  return found;
}

/**
 * Finds wire constant values spelled out as literals in the source files under `roots`.
 * A component that needs a wire name must import it from @deckhand/wire instead.
 */
export function findWireLiteralDuplicates(
  roots: string[],
  options: { skip?: (path: string) => boolean; base?: string } = {},
): LiteralFinding[] {
  const literals = wireLiterals();
  const skip = options.skip ?? (() => false);
  const findings: LiteralFinding[] = [];
  for (const root of roots) {
    for (const file of listSourceFiles(root, skip)) {
      const text = readFileSync(file, "utf8");
      const lines = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false);
      for (const { text: value, position, identifier } of stringLiterals(text)) {
        const literal = literals.find(
          (candidate) =>
            (!identifier || candidate.name.startsWith("env.")) && matches(value, candidate),
        );
        if (!literal) continue;
        const { line, character } = lines.getLineAndCharacterOfPosition(position);
        findings.push({
          file: options.base ? relative(options.base, file) : file,
          line: line + 1,
          column: character + 1,
          literal: value,
          constant: literal.name,
        });
      }
    }
  }
  return findings;
}
