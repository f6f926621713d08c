import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import ts from "typescript";

/*
 * Why not @microsoft/api-extractor: it only reads a built `.d.ts` entry point, so the drift test
 * would need a full `tsup` declaration build of every package first (minutes on this machine,
 * and a stale `dist/` would make the test lie), and it bundles its own TypeScript (6.x) rather
 * than the repository's 5.9. This generator asks the repository's own TypeScript for the
 * declaration emit of the sources in memory — one program for all packages, a few seconds — and
 * prints what each entry point exports, flagging "forgotten exports" (types an exported
 * signature names but the entry point does not export) the way api-extractor does.
 */

export interface PublishedPackage {
  name: string;
  /** Relative to the repository root, forward slashes. */
  directory: string;
  /** Absolute path of the package's `src/index.ts`. */
  entry: string;
}

export interface ApiReport {
  packageName: string;
  /** Relative to the repository root. */
  reportPath: string;
  content: string;
  exportNames: string[];
  forgottenExports: string[];
  /** For each exported name, the other exported names its declaration refers to. */
  references: Map<string, Set<string>>;
}

export const REPORT_FILE_NAME = "api-report.md";

/** Every `packages/*` and `db` whose package.json is not `"private": true`. */
export function publishedPackages(root: string): PublishedPackage[] {
  const directories = [
    ...readdirSync(path.join(root, "packages"))
      .sort()
      .map((name) => `packages/${name}`),
    "db",
  ];
  const packages: PublishedPackage[] = [];
  for (const directory of directories) {
    let manifest: { name: string; private?: boolean };
    try {
      manifest = JSON.parse(readFileSync(path.join(root, directory, "package.json"), "utf8"));
    } catch {
      continue;
    }
    if (manifest.private === true) continue;
    packages.push({
      name: manifest.name,
      directory,
      entry: path.join(root, directory, "src", "index.ts"),
    });
  }
  return packages;
}

function compilerOptions(root: string): ts.CompilerOptions {
  const configPath = path.join(root, "tooling", "tsconfig", "base.json");
  const config = ts.readConfigFile(configPath, (file) => ts.sys.readFile(file));
  const parsed = ts.parseJsonConfigFileContent(config.config, ts.sys, path.dirname(configPath));
  return {
    ...parsed.options,
    noEmit: false,
    declaration: true,
    emitDeclarationOnly: true,
    sourceMap: false,
    declarationMap: false,
    outDir: undefined,
  };
}

interface Origin {
  file: string;
  name: string;
}

const printer = ts.createPrinter({ removeComments: true, newLine: ts.NewLineKind.LineFeed });

function declaredNames(statement: ts.Statement): string[] {
  if (ts.isVariableStatement(statement)) {
    return statement.declarationList.declarations.flatMap((declaration) =>
      ts.isIdentifier(declaration.name) ? [declaration.name.text] : [],
    );
  }
  if (
    (ts.isFunctionDeclaration(statement) ||
      ts.isClassDeclaration(statement) ||
      ts.isInterfaceDeclaration(statement) ||
      ts.isTypeAliasDeclaration(statement) ||
      ts.isEnumDeclaration(statement) ||
      ts.isModuleDeclaration(statement)) &&
    statement.name !== undefined &&
    ts.isIdentifier(statement.name)
  ) {
    return [statement.name.text];
  }
  return [];
}

function leftmostIdentifier(node: ts.Node): string | undefined {
  let current: ts.Node = node;
  while (true) {
    if (ts.isIdentifier(current)) return current.text;
    if (ts.isQualifiedName(current)) current = current.left;
    else if (ts.isPropertyAccessExpression(current)) current = current.expression;
    else return undefined;
  }
}

/** Names a declaration refers to in type positions, less its own type parameters. */
function referencedNames(statement: ts.Node): Set<string> {
  const names = new Set<string>();
  const typeParameters = new Set<string>();
  const visit = (node: ts.Node): void => {
    if (ts.isTypeParameterDeclaration(node)) typeParameters.add(node.name.text);
    let name: string | undefined;
    if (ts.isTypeReferenceNode(node)) name = leftmostIdentifier(node.typeName);
    else if (ts.isExpressionWithTypeArguments(node)) name = leftmostIdentifier(node.expression);
    else if (ts.isTypeQueryNode(node)) name = leftmostIdentifier(node.exprName);
    if (name !== undefined) names.add(name);
    ts.forEachChild(node, visit);
  };
  visit(statement);
  for (const name of typeParameters) names.delete(name);
  return names;
}

class DeclarationFiles {
  private readonly parsed = new Map<string, ts.SourceFile>();
  private readonly texts: Map<string, string>;

  constructor(texts: Map<string, string>) {
    this.texts = texts;
  }

  file(fileName: string): ts.SourceFile | undefined {
    let sourceFile = this.parsed.get(fileName);
    if (sourceFile === undefined) {
      const text = this.texts.get(fileName);
      if (text === undefined) return undefined;
      sourceFile = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true);
      this.parsed.set(fileName, sourceFile);
    }
    return sourceFile;
  }

  statements(origin: Origin): ts.Statement[] {
    const sourceFile = this.file(origin.file);
    if (sourceFile === undefined) return [];
    return sourceFile.statements.filter((statement) =>
      declaredNames(statement).includes(origin.name),
    );
  }

  private resolveSpecifier(fromFile: string, specifier: string): string | undefined {
    if (!specifier.startsWith(".")) return undefined;
    const base = path.resolve(path.dirname(fromFile), specifier).replace(/\.(?:[cm]?[jt]s)$/, "");
    for (const candidate of [`${base}.d.ts`, path.join(base, "index.d.ts")]) {
      if (this.texts.has(candidate)) return candidate;
    }
    return undefined;
  }

  /**
   * Follows imports and re-exports inside the package to where `name`, as seen from `file`, is
   * declared. `undefined` means it comes from another package or is a global.
   */
  resolve(file: string, name: string, depth = 0): Origin | undefined {
    const sourceFile = this.file(file);
    if (sourceFile === undefined || depth > 20) return undefined;
    for (const statement of sourceFile.statements) {
      if (declaredNames(statement).includes(name)) return { file, name };
      if (ts.isImportDeclaration(statement) && ts.isStringLiteral(statement.moduleSpecifier)) {
        const bindings = statement.importClause?.namedBindings;
        if (bindings === undefined || !ts.isNamedImports(bindings)) continue;
        for (const element of bindings.elements) {
          if (element.name.text !== name) continue;
          const target = this.resolveSpecifier(file, statement.moduleSpecifier.text);
          if (target === undefined) return undefined;
          return this.resolve(target, element.propertyName?.getText() ?? name, depth + 1);
        }
      }
      if (
        ts.isExportDeclaration(statement) &&
        statement.moduleSpecifier !== undefined &&
        ts.isStringLiteral(statement.moduleSpecifier) &&
        statement.exportClause !== undefined &&
        ts.isNamedExports(statement.exportClause)
      ) {
        for (const element of statement.exportClause.elements) {
          if (element.name.text !== name) continue;
          const target = this.resolveSpecifier(file, statement.moduleSpecifier.text);
          if (target === undefined) return undefined;
          return this.resolve(target, element.propertyName?.getText() ?? name, depth + 1);
        }
      }
    }
    return undefined;
  }
}

/**
 * TypeScript prints the members of an inferred union (and of the object type `z.enum` maps a
 * union to) in the order it happened to create their types, which changes with what else the
 * program checked first. Sorting them, where order means nothing, keeps a report from drifting
 * when only another package changed.
 */
function canonicalOrder(sourceFile: ts.SourceFile): ts.TransformerFactory<ts.Node> {
  const textOf = (node: ts.Node) => printer.printNode(ts.EmitHint.Unspecified, node, sourceFile);
  const sorted = <T extends ts.Node>(nodes: readonly T[]) =>
    ts.factory.createNodeArray(
      [...nodes]
        .map((node) => ({ node, text: textOf(node) }))
        .sort((left, right) => (left.text < right.text ? -1 : left.text > right.text ? 1 : 0))
        .map((entry) => entry.node),
    );
  return (context) => {
    const visit = (node: ts.Node): ts.Node => {
      const visited = ts.visitEachChild(node, visit, context);
      if (ts.isUnionTypeNode(visited)) {
        return ts.factory.updateUnionTypeNode(visited, sorted(visited.types));
      }
      if (ts.isTypeReferenceNode(visited) && visited.typeArguments !== undefined) {
        const typeArguments = visited.typeArguments.map((argument) =>
          ts.isTypeLiteralNode(argument)
            ? ts.factory.updateTypeLiteralNode(argument, sorted(argument.members))
            : argument,
        );
        return ts.factory.updateTypeReferenceNode(
          visited,
          visited.typeName,
          ts.factory.createNodeArray(typeArguments),
        );
      }
      return visited;
    };
    return (root) => visit(root);
  };
}

function printStatement(statement: ts.Statement, sourceFile: ts.SourceFile): string {
  const modifiers = ts.canHaveModifiers(statement) ? (ts.getModifiers(statement) ?? []) : [];
  const kept = modifiers.filter(
    (modifier) =>
      modifier.kind !== ts.SyntaxKind.ExportKeyword &&
      modifier.kind !== ts.SyntaxKind.DeclareKeyword &&
      modifier.kind !== ts.SyntaxKind.DefaultKeyword,
  );
  const stripped = ts.isVariableStatement(statement)
    ? ts.factory.updateVariableStatement(statement, kept, statement.declarationList)
    : ts.isFunctionDeclaration(statement)
      ? ts.factory.updateFunctionDeclaration(
          statement,
          kept,
          statement.asteriskToken,
          statement.name,
          statement.typeParameters,
          statement.parameters,
          statement.type,
          statement.body,
        )
      : ts.isClassDeclaration(statement)
        ? ts.factory.updateClassDeclaration(
            statement,
            kept,
            statement.name,
            statement.typeParameters,
            statement.heritageClauses,
            statement.members,
          )
        : ts.isInterfaceDeclaration(statement)
          ? ts.factory.updateInterfaceDeclaration(
              statement,
              kept,
              statement.name,
              statement.typeParameters,
              statement.heritageClauses,
              statement.members,
            )
          : ts.isTypeAliasDeclaration(statement)
            ? ts.factory.updateTypeAliasDeclaration(
                statement,
                kept,
                statement.name,
                statement.typeParameters,
                statement.type,
              )
            : statement;
  const [normalized] = ts.transform(stripped, [canonicalOrder(sourceFile)]).transformed;
  return printer.printNode(ts.EmitHint.Unspecified, normalized ?? stripped, sourceFile);
}

function packageOf(fileName: string, packages: PublishedPackage[], root: string): string {
  const relative = path.relative(root, fileName).split(path.sep).join("/");
  const owner = packages.find((candidate) => relative.startsWith(`${candidate.directory}/`));
  if (owner !== undefined) return owner.name;
  const match = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(relative);
  return match?.[1] ?? relative;
}

/**
 * Builds every published package's API report in one TypeScript program. Throws when the
 * sources do not type-check far enough to emit declarations.
 */
export function generateApiReports(root: string): ApiReport[] {
  const packages = publishedPackages(root);
  const program = ts.createProgram(
    packages.map((candidate) => candidate.entry),
    compilerOptions(root),
  );
  const texts = new Map<string, string>();
  program.emit(
    undefined,
    (fileName, text) => texts.set(path.resolve(fileName), text),
    undefined,
    true,
  );
  const declarations = new DeclarationFiles(texts);
  const checker = program.getTypeChecker();

  return packages.map((published) => {
    const packageRoot = path.join(root, published.directory) + path.sep;
    const entry = program.getSourceFile(published.entry);
    const moduleSymbol = entry === undefined ? undefined : checker.getSymbolAtLocation(entry);
    if (moduleSymbol === undefined) throw new Error(`cannot read ${published.entry}`);
    const exported = checker
      .getExportsOfModule(moduleSymbol)
      .sort((left, right) => (left.name < right.name ? -1 : left.name > right.name ? 1 : 0));

    const originOf = new Map<string, string>();
    const entries: { name: string; origin?: Origin; from?: string }[] = [];
    for (const symbol of exported) {
      const target =
        symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
      const declaration = target.declarations?.[0];
      if (declaration === undefined) {
        entries.push({ name: symbol.name, from: "unknown" });
        continue;
      }
      const sourceName = declaration.getSourceFile().fileName;
      if (!path.resolve(sourceName).startsWith(packageRoot)) {
        entries.push({ name: symbol.name, from: packageOf(sourceName, packages, root) });
        continue;
      }
      const origin = {
        file: path.resolve(sourceName).replace(/\.tsx?$/, ".d.ts"),
        name: target.name,
      };
      originOf.set(`${origin.file}#${origin.name}`, symbol.name);
      entries.push({ name: symbol.name, origin });
    }

    const forgotten = new Set<string>();
    const references = new Map<string, Set<string>>();
    const blocks: string[] = [];
    for (const entry of entries) {
      if (entry.origin === undefined) {
        blocks.push(`export { ${entry.name} } from "${entry.from}";`);
        continue;
      }
      const statements = declarations.statements(entry.origin);
      const sourceFile = declarations.file(entry.origin.file);
      if (statements.length === 0 || sourceFile === undefined) {
        throw new Error(`no declaration emitted for ${entry.name} in ${entry.origin.file}`);
      }
      const referenced = new Set<string>();
      const warnings: string[] = [];
      for (const statement of statements) {
        for (const name of referencedNames(statement)) {
          const origin = declarations.resolve(entry.origin.file, name);
          if (origin === undefined || !origin.file.startsWith(packageRoot)) continue;
          const exportName = originOf.get(`${origin.file}#${origin.name}`);
          if (exportName === undefined) {
            forgotten.add(origin.name);
            warnings.push(
              `// Warning: (forgotten-export) "${origin.name}" (${path.relative(packageRoot, origin.file)}) is referenced here but not exported by src/index.ts`,
            );
          } else if (exportName !== entry.name) {
            referenced.add(exportName);
          }
        }
      }
      references.set(entry.name, referenced);
      const renamed = entry.origin.name === entry.name ? "" : `// exported as ${entry.name}\n`;
      const printed = statements.map((statement) => printStatement(statement, sourceFile));
      blocks.push(
        `${[...new Set(warnings)].join("\n")}${warnings.length > 0 ? "\n" : ""}${renamed}${printed.join("\n")}`,
      );
    }

    const content = [
      `## API Report File for "${published.name}"`,
      "",
      "> Do not edit this file. It is generated by `pnpm api-report` from `src/index.ts`; the",
      "> api-report test fails when it differs from the sources.",
      "",
      "```ts",
      blocks.join("\n\n"),
      "```",
      "",
    ].join("\n");
    return {
      packageName: published.name,
      reportPath: `${published.directory}/${REPORT_FILE_NAME}`,
      content,
      exportNames: entries.map((entry) => entry.name),
      forgottenExports: [...forgotten].sort(),
      references,
    };
  });
}
