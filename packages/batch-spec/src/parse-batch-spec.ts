// Reads a batch spec from YAML or JSON text and validates it completely: syntax, structure,
// cross-field rules, templates and (given the spec's directory) mounts. Every problem comes back
// as a diagnostic with its position; nothing here throws for a bad spec.
import { LineCounter, parseDocument, visit } from "yaml";
import {
  type AcpProviderCatalogue,
  type AgentTypeCatalogue,
  defaultAgentTypes,
} from "./agent-types.ts";
import { type BatchSpec, BatchSpecSchema } from "./batch-spec-schema.ts";
import { canonicalSpec } from "./canonical.ts";
import { type BatchSpecDiagnostic, sortDiagnostics } from "./diagnostics.ts";
import { laterDocumentsAreEmpty, parseGoYamlCompatible } from "./go-yaml-compat.ts";
import { validateMounts } from "./mounts.ts";
import { schemaDiagnostics } from "./schema-diagnostics.ts";
import { SpecSource } from "./spec-source.ts";
import { dryRunTemplates } from "./template-dry-run.ts";
import { checkSpecRules } from "./validate-rules.ts";

export type BatchSpecFormat = "yaml" | "json";

export interface ParseBatchSpecOptions {
  /** The file name diagnostics carry. */
  file: string;
  /** Defaults to "json" for a `.json` file name, else "yaml". */
  format?: BatchSpecFormat;
  /**
   * The directory that holds the spec. When given, mount paths are checked to exist and to stay
   * inside it (symlinks followed).
   */
  specDirectory?: string;
  /** The known `codingAgent.type` values; defaults to the built-in agent registry. */
  agentTypes?: AgentTypeCatalogue;
  /**
   * The providers `type: acp` steps may name (the server's ACP providers); without it the
   * provider is not checked, as a spec validated away from the server cannot know them.
   */
  acpProviders?: AcpProviderCatalogue;
  /** Skip the template dry-run (for callers that run it separately). */
  skipTemplates?: boolean;
}

export interface ParseBatchSpecResult {
  /** The validated spec in canonical form; undefined when there is any diagnostic. */
  spec: BatchSpec | undefined;
  /** Every problem found, ordered by position. */
  diagnostics: BatchSpecDiagnostic[];
}

/** The line and column in a `JSON.parse` error message (V8 includes one, or an offset). */
function jsonErrorPosition(message: string, source: SpecSource): { line: number; column: number } {
  const lineColumn = message.match(/line (\d+) column (\d+)/);
  if (lineColumn) return { line: Number(lineColumn[1]), column: Number(lineColumn[2]) };
  const position = message.match(/position (\d+)/);
  if (position) return source.position(Number(position[1]));
  return { line: 1, column: 1 };
}

/** Line starts of `text`, counted as the `yaml` parser counts them. */
function lineCounterOf(text: string): LineCounter {
  const lineCounter = new LineCounter();
  lineCounter.addNewLine(0);
  for (let offset = text.indexOf("\n"); offset >= 0; offset = text.indexOf("\n", offset + 1)) {
    lineCounter.addNewLine(offset + 1);
  }
  return lineCounter;
}

function firstLine(message: string): string {
  return message.split("\n")[0]!.replace(/ at line \d+, column \d+:?$/, "");
}

/**
 * Parses and validates a batch spec. Returns the canonical spec when it is valid, and every
 * diagnostic otherwise: syntax errors and duplicate keys, unknown fields (with "did you mean"),
 * wrong types, version rules, run/codingAgent/image rules, mount and file path rules, unknown
 * agent types, template errors, and mounts that leave the spec's directory.
 */
export function parseBatchSpec(text: string, options: ParseBatchSpecOptions): ParseBatchSpecResult {
  const { file } = options;
  const format = options.format ?? (/\.json$/i.test(file) ? "json" : "yaml");
  // Sourcegraph parses specs with gopkg.in/yaml.v3; the text is adjusted where that parser is
  // more lenient than this one (JSON needs nothing: its strings cannot span lines).
  // merge: src-cli reads specs with go-yaml, which expands `<<: *anchor` merge keys.
  // uniqueKeys: yaml.v3 refuses a key defined twice in one map ("already defined at line N").
  const parse = (source: string) =>
    parseDocument(source, { prettyErrors: false, uniqueKeys: true, merge: true });
  const compatible =
    format === "yaml"
      ? parseGoYamlCompatible(text, parse)
      : { text, originalOffset: (offset: number) => offset, parsed: parse(text) };
  const parsedText = compatible.text;
  const document = compatible.parsed;
  const source = new SpecSource(
    file,
    parsedText,
    document,
    lineCounterOf(text),
    compatible.originalOffset,
  );
  const diagnostics: BatchSpecDiagnostic[] = [];

  if (format === "json") {
    try {
      JSON.parse(text);
    } catch (error) {
      const message = (error as Error).message;
      const { line, column } = jsonErrorPosition(message, source);
      diagnostics.push({
        file,
        line,
        column,
        path: "",
        message: `invalid JSON: ${message.replace(/ in JSON at position \d+.*$/, "")}; fix the syntax here`,
        code: "json_syntax",
      });
      return { spec: undefined, diagnostics };
    }
  }

  let fatal = false;
  for (const error of document.errors) {
    const offset = error.pos[0];
    const { line, column } = source.position(offset);
    if (error.code === "MULTIPLE_DOCS") {
      if (laterDocumentsAreEmpty(parsedText)) continue;
      fatal = true;
      diagnostics.push({
        file,
        line,
        column,
        path: "",
        message:
          'invalid YAML: a "---" or "..." line ends the spec and more follows; a batch spec is one YAML document (Sourcegraph reads the first and drops the rest), so remove the line or what follows it',
        code: "yaml_syntax",
      });
      continue;
    }
    if (error.code === "DUPLICATE_KEY") {
      const duplicate = source.duplicateKeyAt(offset);
      const key = duplicate?.key ?? parsedText.slice(error.pos[0], error.pos[1]);
      const first = duplicate?.first === undefined ? undefined : source.position(duplicate.first);
      const earlier =
        first === undefined ? "" : ` (first at line ${first.line}, column ${first.column})`;
      diagnostics.push({
        file,
        line,
        column,
        path: "",
        message: `duplicate key "${key}"${earlier}; a key may appear once in a map, so merge or remove one`,
        code: "duplicate_key",
      });
      continue;
    }
    fatal = true;
    diagnostics.push({
      file,
      line,
      column,
      path: "",
      message: `invalid ${format === "json" ? "JSON" : "YAML"}: ${firstLine(error.message)}`,
      code: format === "json" ? "json_syntax" : "yaml_syntax",
    });
  }
  if (fatal) return { spec: undefined, diagnostics: sortDiagnostics(diagnostics) };

  let data: unknown;
  try {
    // maxAliasCount stops "billion laughs" alias expansion.
    data = document.toJS({ maxAliasCount: 1_000 });
  } catch (error) {
    let offset = 0;
    let message = `invalid YAML: ${firstLine((error as Error).message)}`;
    visit(document, {
      Alias(_key, alias) {
        if (alias.resolve(document) !== undefined) return undefined;
        offset = alias.range?.[0] ?? 0;
        message = `invalid YAML: alias "*${alias.source}" refers to no anchor before it; define "&${alias.source}" earlier in the file`;
        return visit.BREAK;
      },
    });
    diagnostics.push({
      file,
      ...source.position(offset),
      path: "",
      message,
      code: "yaml_syntax",
    });
    return { spec: undefined, diagnostics: sortDiagnostics(diagnostics) };
  }
  if (data === null || typeof data !== "object" || Array.isArray(data)) {
    const { line, column } = source.locate([], "value");
    diagnostics.push({
      file,
      line: Math.max(1, line),
      column: Math.max(1, column),
      path: "",
      message:
        data === null || data === undefined
          ? "the spec is empty; a batch spec is a map with at least a name"
          : "a batch spec is a map of fields (name, on, steps, changesetTemplate, ...)",
      code: "not_a_mapping",
    });
    return { spec: undefined, diagnostics };
  }

  const parsed = BatchSpecSchema.safeParse(data);
  if (!parsed.success) diagnostics.push(...schemaDiagnostics(parsed.error.issues, data, source));
  const record = data as Record<string, unknown>;
  diagnostics.push(
    ...checkSpecRules(record, source, {
      agentTypes: options.agentTypes ?? defaultAgentTypes(),
      ...(options.acpProviders ? { acpProviders: options.acpProviders } : {}),
    }),
  );
  if (options.skipTemplates !== true) diagnostics.push(...dryRunTemplates(record, { source }));
  if (options.specDirectory !== undefined) {
    diagnostics.push(...validateMounts(record, options.specDirectory, { source }));
  }

  if (diagnostics.length > 0 || !parsed.success) {
    return { spec: undefined, diagnostics: sortDiagnostics(diagnostics) };
  }
  return { spec: canonicalSpec(parsed.data), diagnostics };
}
