// Measures the shape of TypeScript source: lines per file, members per class, and the functions
// longer than a limit. Reshaping work quotes these numbers, so anyone can take them again:
//
//   sh scripts/toolchain.sh node scripts/code-shape.ts packages/sessions/src [--over 100]
//
// Test files are left out; lines are the lines a declaration spans, comments included.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import ts from "typescript";

const args = process.argv.slice(2);
const overIndex = args.indexOf("--over");
const limit = overIndex === -1 ? 100 : Number(args[overIndex + 1]);
const roots = args.filter((_, index) => index !== overIndex && index !== overIndex + 1);
if (roots.length === 0 || !Number.isFinite(limit)) {
  console.error("usage: node scripts/code-shape.ts DIR... [--over LINES]");
  process.exit(2);
}

function sourceFiles(path: string): string[] {
  if (statSync(path).isFile()) return [path];
  return readdirSync(path)
    .filter((name) => name !== "node_modules" && name !== "dist")
    .flatMap((name) => sourceFiles(join(path, name)))
    .filter((file) => /\.tsx?$/.test(file) && !/\.test\.tsx?$/.test(file))
    .sort();
}

interface Measured {
  files: { file: string; lines: number }[];
  classes: { name: string; file: string; lines: number; methods: number; publicMethods: number }[];
  long: { name: string; file: string; lines: number }[];
}

function linesOf(source: ts.SourceFile, node: ts.Node): number {
  const start = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
  const end = source.getLineAndCharacterOfPosition(node.getEnd()).line;
  return end - start + 1;
}

function nameOf(node: ts.Node, source: ts.SourceFile): string {
  const named = node as { name?: ts.Node };
  if (named.name) return named.name.getText(source);
  if (ts.isArrowFunction(node) || ts.isFunctionExpression(node)) {
    const parent = node.parent;
    if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent)) {
      return parent.name.getText(source);
    }
  }
  return "(anonymous)";
}

function measure(files: string[]): Measured {
  const measured: Measured = { files: [], classes: [], long: [] };
  for (const file of files) {
    const text = readFileSync(file, "utf8");
    const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
    const shown = relative(process.cwd(), file);
    measured.files.push({ file: shown, lines: text.split("\n").length });
    const visit = (node: ts.Node, owner: string | null): void => {
      if (ts.isClassDeclaration(node)) {
        const methods = node.members.filter(
          (member) =>
            ts.isMethodDeclaration(member) ||
            ts.isGetAccessorDeclaration(member) ||
            ts.isSetAccessorDeclaration(member),
        );
        // Not private: neither a `#name` nor marked `private`/`protected`.
        const isPublic = (member: ts.ClassElement) =>
          !(member.name && ts.isPrivateIdentifier(member.name)) &&
          (ts.getCombinedModifierFlags(member as unknown as ts.Declaration) &
            (ts.ModifierFlags.Private | ts.ModifierFlags.Protected)) ===
            0;
        measured.classes.push({
          name: node.name?.getText(source) ?? "(anonymous)",
          file: shown,
          lines: linesOf(source, node),
          methods: methods.length,
          publicMethods: methods.filter(isPublic).length,
        });
        for (const member of node.members) visit(member, node.name?.getText(source) ?? null);
        return;
      }
      if (ts.isFunctionLike(node) && (node as ts.FunctionLikeDeclaration).body) {
        const lines = linesOf(source, node);
        const name = nameOf(node, source);
        if (lines > limit) {
          measured.long.push({ name: owner ? `${owner}.${name}` : name, file: shown, lines });
        }
      }
      ts.forEachChild(node, (child) => visit(child, owner));
    };
    visit(source, null);
  }
  return measured;
}

const measured = measure(roots.flatMap(sourceFiles));
const total = measured.files.reduce((sum, file) => sum + file.lines, 0);
console.log(`files: ${measured.files.length}, lines: ${total}`);
for (const { file, lines } of [...measured.files].sort((a, b) => b.lines - a.lines)) {
  console.log(`  ${String(lines).padStart(5)}  ${file}`);
}
console.log("classes (lines, methods of which not private):");
for (const entry of [...measured.classes].sort((a, b) => b.lines - a.lines)) {
  console.log(
    `  ${String(entry.lines).padStart(5)}  ${entry.name}: ${entry.methods} methods, ${entry.publicMethods} not private  (${entry.file})`,
  );
}
console.log(`functions over ${limit} lines:`);
for (const entry of [...measured.long].sort((a, b) => b.lines - a.lines)) {
  console.log(`  ${String(entry.lines).padStart(5)}  ${entry.name}  (${entry.file})`);
}
if (measured.long.length === 0) console.log("  none");
