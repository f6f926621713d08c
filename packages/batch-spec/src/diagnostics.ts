// Validation problems are data: each names the file, the line and column (1-based), the field
// path and what to do. Nothing in validation throws for a bad spec.

/** One problem in a batch spec. */
export interface BatchSpecDiagnostic {
  file: string;
  /** 1-based; 0 when the position is unknown (a spec validated without its source text). */
  line: number;
  /** 1-based, in UTF-16 code units like an editor's column; 0 when unknown. */
  column: number;
  /** The field, as in `steps[2].codingAgent.type`; empty for the document as a whole. */
  path: string;
  /** What is wrong and what to do about it. */
  message: string;
  /** A stable identifier for the kind of problem, e.g. `unknown_field`. */
  code: BatchSpecDiagnosticCode;
}

export type BatchSpecDiagnosticCode =
  | "yaml_syntax"
  | "json_syntax"
  | "duplicate_key"
  | "not_a_mapping"
  | "unknown_field"
  | "missing_field"
  | "invalid_type"
  | "invalid_value"
  | "invalid_name"
  | "step_missing_command"
  | "step_missing_run"
  | "step_missing_container"
  | "step_missing_image"
  | "step_run_and_coding_agent"
  | "coding_agent_requires_version_3"
  | "image_requires_version_3"
  | "image_and_container"
  | "changeset_hooks_require_version_3"
  | "steps_without_changeset_template"
  | "on_query_and_repository"
  | "on_missing_target"
  | "on_branch_and_branches"
  | "on_branch_without_repository"
  | "invalid_path_character"
  | "invalid_image"
  | "mount_outside_spec_directory"
  | "mount_not_found"
  | "unknown_agent_type"
  | "unknown_acp_provider"
  | "acp_step_missing_provider"
  | "acp_step_image"
  | "acp_field_without_acp_type"
  | "invalid_glob"
  | "template_syntax"
  | "template_unknown_variable"
  | "template_unknown_function"
  | "template_error";

/** A field path as a list of keys and indexes. */
export type FieldPath = readonly (string | number)[];

const plainKey = /^[A-Za-z_][A-Za-z0-9_-]*$/;

/** `["steps", 2, "codingAgent", "type"]` → `steps[2].codingAgent.type`; odd keys are quoted. */
export function formatFieldPath(path: FieldPath): string {
  let text = "";
  for (const segment of path) {
    if (typeof segment === "number") text += `[${segment}]`;
    else if (plainKey.test(segment)) text += text === "" ? segment : `.${segment}`;
    else text += `[${JSON.stringify(segment)}]`;
  }
  return text;
}

/** `file:line:column: path: message`, the one-line form the CLI prints. */
export function formatDiagnostic(diagnostic: BatchSpecDiagnostic): string {
  const where = `${diagnostic.file}:${diagnostic.line}:${diagnostic.column}`;
  return diagnostic.path === ""
    ? `${where}: ${diagnostic.message}`
    : `${where}: ${diagnostic.path}: ${diagnostic.message}`;
}

/** Orders diagnostics by position, so they read top to bottom like the file. */
export function sortDiagnostics(diagnostics: BatchSpecDiagnostic[]): BatchSpecDiagnostic[] {
  return diagnostics.sort(
    (left, right) =>
      left.line - right.line ||
      left.column - right.column ||
      left.path.localeCompare(right.path) ||
      left.message.localeCompare(right.message),
  );
}
