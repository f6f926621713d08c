// The variables templates see, as values (for rendering) and as shapes (for checking a spec
// before it runs). Both come from the same field lists so they cannot drift apart.
import { shellQuote } from "../coding-agent/shell-quote.ts";
import { closestMatch } from "../suggest.ts";
import type { TemplateContext } from "./template-evaluate.ts";
import {
  anyShape,
  stringListShape,
  stringShape,
  type TemplateShape,
} from "./template-functions.ts";
import { templateClose, templateOpen } from "./template-syntax.ts";
import { spaceSeparatedList, type TemplateValue } from "./template-values.ts";

/** The repository a workspace belongs to. */
export interface TemplateRepository {
  name: string;
  branch?: string;
  /** Paths of the search results in this repository (`repository.search_result_paths`). */
  fileMatches?: readonly string[];
}

export interface TemplateBatchChange {
  name: string;
  description?: string;
}

/** Files changed by a step (or by all steps so far), as git reports them. */
export interface TemplateChangedFiles {
  modified?: readonly string[];
  added?: readonly string[];
  deleted?: readonly string[];
  renamed?: readonly string[];
}

/** The result of one step: its changes and its output. */
export interface TemplateStepResult {
  changedFiles?: TemplateChangedFiles;
  stdout?: string;
  stderr?: string;
}

export interface StepTemplateContextInput {
  repository: TemplateRepository;
  batchChange: TemplateBatchChange;
  /** Outputs set by earlier steps, by name. */
  outputs?: Readonly<Record<string, TemplateValue>>;
  /** The previous step's result; empty for the first step. */
  previousStep?: TemplateStepResult;
  /** This step's result: empty while rendering `run`, set while rendering `outputs`. */
  step?: TemplateStepResult;
  /** Changes made by all steps so far, and the workspace path relative to the repository root. */
  steps?: { changedFiles?: TemplateChangedFiles; path?: string };
}

export interface ChangesetTemplateContextInput {
  repository: TemplateRepository;
  batchChange: TemplateBatchChange;
  outputs?: Readonly<Record<string, TemplateValue>>;
  steps?: { changedFiles?: TemplateChangedFiles; path?: string };
}

/** Left in place when a changeset template is rendered; the server fills it in later. */
export const batchChangeLinkPlaceholder = `${templateOpen} batch_change_link ${templateClose}`;

const fileListFields = ["modified_files", "added_files", "deleted_files", "renamed_files"] as const;
const stepResultFields = [...fileListFields, "stdout", "stderr"] as const;

/**
 * File names come from `git diff` and search results, so they may hold shell metacharacters.
 * Each is shell-quoted before a template sees it (names without special characters stay as they
 * are), so `${{ join steps.modified_files " " }}` in a `run:` cannot inject commands.
 */
function quotedFiles(files: readonly string[] | undefined): string[] {
  return (files ?? []).map(shellQuote);
}

function fileLists(changes: TemplateChangedFiles | undefined): Record<string, TemplateValue> {
  return {
    modified_files: quotedFiles(changes?.modified),
    added_files: quotedFiles(changes?.added),
    deleted_files: quotedFiles(changes?.deleted),
    renamed_files: quotedFiles(changes?.renamed),
  };
}

function stepResult(result: TemplateStepResult | undefined): Record<string, TemplateValue> {
  return {
    ...fileLists(result?.changedFiles),
    stdout: result?.stdout ?? "",
    stderr: result?.stderr ?? "",
  };
}

function repositoryValue(repository: TemplateRepository): Record<string, TemplateValue> {
  return {
    name: repository.name,
    branch: repository.branch ?? "",
    search_result_paths: spaceSeparatedList(
      [...(repository.fileMatches ?? [])].sort().map(shellQuote),
    ),
  };
}

function batchChangeValue(batchChange: TemplateBatchChange): Record<string, TemplateValue> {
  return { name: batchChange.name, description: batchChange.description ?? "" };
}

/** A copy with a null prototype, so a template can never reach `Object.prototype`. */
function plainRecord(values: Readonly<Record<string, TemplateValue>> | undefined): TemplateValue {
  const record: Record<string, TemplateValue> = Object.create(null);
  for (const [key, value] of Object.entries(values ?? {})) record[key] = value;
  return record;
}

/** The context for a step's `run`, `env`, `files`, `outputs`, `if` and `codingAgent.prompt`. */
export function createStepTemplateContext(input: StepTemplateContextInput): TemplateContext {
  return {
    repository: repositoryValue(input.repository),
    batch_change: batchChangeValue(input.batchChange),
    outputs: plainRecord(input.outputs),
    previous_step: stepResult(input.previousStep),
    step: stepResult(input.step),
    steps: { ...fileLists(input.steps?.changedFiles), path: input.steps?.path ?? "" },
  };
}

/** The context for `changesetTemplate` fields; `batch_change_link` renders as itself. */
export function createChangesetTemplateContext(
  input: ChangesetTemplateContextInput,
): TemplateContext {
  return {
    repository: repositoryValue(input.repository),
    batch_change: batchChangeValue(input.batchChange),
    outputs: plainRecord(input.outputs),
    steps: { ...fileLists(input.steps?.changedFiles), path: input.steps?.path ?? "" },
    batch_change_link: batchChangeLinkPlaceholder,
  };
}

/** An output a step declares, as the checker needs it. */
export interface DeclaredOutput {
  name: string;
  format: "json" | "yaml" | "text" | undefined;
}

function objectShape(fields: Record<string, TemplateShape>): TemplateShape {
  return { kind: "object", fields };
}

const repositoryShape = objectShape({
  name: stringShape,
  branch: stringShape,
  search_result_paths: stringListShape,
});
const batchChangeShape = objectShape({ name: stringShape, description: stringShape });
const stepResultShape = objectShape(
  Object.fromEntries(
    stepResultFields.map((field) => [
      field,
      field === "stdout" || field === "stderr" ? stringShape : stringListShape,
    ]),
  ),
);
const stepsShape = objectShape({
  ...Object.fromEntries(fileListFields.map((field) => [field, stringListShape])),
  path: stringShape,
});

/**
 * The outputs declared so far, and the contexts templates are checked against with them. It
 * grows as the steps are read in order, so checking a spec's steps costs one entry per declared
 * output, not (as a shape built afresh for each step would) one per output for every step after
 * it. Its shapes see the outputs declared when they are used: check a step's templates before
 * declaring the step's outputs.
 */
export class DeclaredOutputs {
  readonly #declared: DeclaredOutput[] = [];
  readonly #fields: Record<string, TemplateShape> = {};
  /** The shape of a step context: the outputs of the steps before it. */
  readonly stepContextShape: TemplateShape;
  /** The shape of a changeset template context: every output the steps declare. */
  readonly changesetContextShape: TemplateShape;

  constructor(outputs: readonly DeclaredOutput[] = []) {
    this.stepContextShape = objectShape({
      repository: repositoryShape,
      batch_change: batchChangeShape,
      outputs: this.#outputsShape("step"),
      previous_step: stepResultShape,
      step: stepResultShape,
      steps: stepsShape,
    });
    this.changesetContextShape = objectShape({
      repository: repositoryShape,
      batch_change: batchChangeShape,
      outputs: this.#outputsShape("changeset"),
      steps: stepsShape,
      batch_change_link: stringShape,
    });
    this.declare(outputs);
  }

  /** Every output declared so far, in order. */
  get list(): readonly DeclaredOutput[] {
    return this.#declared;
  }

  declare(outputs: readonly DeclaredOutput[]): void {
    for (const output of outputs) {
      this.#fields[output.name] =
        output.format === "json" || output.format === "yaml" ? anyShape : stringShape;
      this.#declared.push(output);
    }
  }

  #outputsShape(where: "step" | "changeset"): TemplateShape {
    return {
      kind: "object",
      fields: this.#fields,
      describeMissing: (path, field) => {
        const names = this.#declared.map((output) => output.name);
        const suggestion = closestMatch(field, names);
        const defined =
          where === "step"
            ? `no earlier step defines an output named "${field}"`
            : `no step defines an output named "${field}"`;
        const hint =
          suggestion === undefined
            ? names.length === 0
              ? "; declare it under a step's outputs"
              : `; defined outputs: ${names.join(", ")}`
            : `; did you mean "outputs.${suggestion}"?`;
        return `unknown output "${path}": ${defined}${hint}`;
      },
    };
  }
}

/** The shape of a step context, given the outputs declared by the steps before it. */
export function stepContextShape(outputs: readonly DeclaredOutput[]): TemplateShape {
  return new DeclaredOutputs(outputs).stepContextShape;
}

/** The shape of a changeset template context, given every output the steps declare. */
export function changesetContextShape(outputs: readonly DeclaredOutput[]): TemplateShape {
  return new DeclaredOutputs(outputs).changesetContextShape;
}
