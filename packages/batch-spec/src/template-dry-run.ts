// Checks every template in a spec against the context it will be rendered with, before any
// workspace runs: step fields see the outputs of the steps before them, the changeset template
// sees every output, and neither sees anything else.
import type { BatchSpecDiagnostic, FieldPath } from "./diagnostics.ts";
import { formatFieldPath } from "./diagnostics.ts";
import { SpecSource } from "./spec-source.ts";
import { checkTemplate } from "./template/template-check.ts";
import { type DeclaredOutput, DeclaredOutputs } from "./template/template-context.ts";
import type { TemplateShape } from "./template/template-functions.ts";
import { containsTemplate } from "./template/template-syntax.ts";

type Data = Record<string, unknown>;

function isRecord(value: unknown): value is Data {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** Every templated string of one step, with its field path. */
function stepTemplates(step: Data, path: FieldPath): [FieldPath, string][] {
  const found: [FieldPath, string][] = [];
  const add = (fieldPath: FieldPath, value: unknown) => {
    if (typeof value === "string" && containsTemplate(value)) found.push([fieldPath, value]);
  };
  add([...path, "run"], step.run);
  add([...path, "if"], step.if);
  if (isRecord(step.codingAgent)) add([...path, "codingAgent", "prompt"], step.codingAgent.prompt);
  if (isRecord(step.env)) {
    for (const [name, value] of Object.entries(step.env)) add([...path, "env", name], value);
  } else if (Array.isArray(step.env)) {
    step.env.forEach((entry, index) => {
      if (isRecord(entry)) {
        for (const [name, value] of Object.entries(entry))
          add([...path, "env", index, name], value);
      }
    });
  }
  if (isRecord(step.files)) {
    for (const [name, value] of Object.entries(step.files)) add([...path, "files", name], value);
  }
  return found;
}

function outputTemplates(step: Data, path: FieldPath): [FieldPath, string][] {
  const found: [FieldPath, string][] = [];
  if (isRecord(step.outputs)) {
    for (const [name, output] of Object.entries(step.outputs)) {
      if (isRecord(output) && typeof output.value === "string" && containsTemplate(output.value)) {
        found.push([[...path, "outputs", name, "value"], output.value]);
      }
    }
  }
  return found;
}

function declaredOutputs(step: Data): DeclaredOutput[] {
  if (!isRecord(step.outputs)) return [];
  return Object.entries(step.outputs).map(([name, output]) => {
    const format = isRecord(output) ? output.format : undefined;
    return {
      name,
      format: format === "json" || format === "yaml" || format === "text" ? format : undefined,
    };
  });
}

export interface DryRunOptions {
  /** Where the spec came from, to position diagnostics; without it they carry line 0. */
  source?: SpecSource;
  /** The file name for diagnostics when no `source` is given. */
  file?: string;
}

/**
 * Checks every template in the spec (step `run`, `if`, `env`, `files`, `outputs`,
 * `codingAgent.prompt`, hook steps, and the changeset template's title, body, branch and commit)
 * against its context, and returns a diagnostic per unknown variable, unknown function, wrong
 * call or syntax error. Accepts a validated spec or the raw parsed data.
 */
export function dryRunTemplates(spec: unknown, options: DryRunOptions = {}): BatchSpecDiagnostic[] {
  const source = options.source ?? new SpecSource(options.file ?? "");
  const diagnostics: BatchSpecDiagnostic[] = [];
  if (!isRecord(spec)) return diagnostics;

  const check = (path: FieldPath, template: string, shape: TemplateShape) => {
    for (const problem of checkTemplate(template, shape)) {
      const { line, column } = source.locateInValue(path, template, problem.offset);
      diagnostics.push({
        file: source.file,
        line,
        column,
        path: formatFieldPath(path),
        message: problem.message,
        code: problem.code,
      });
    }
  };

  const checkSteps = (steps: unknown, path: FieldPath, declared: DeclaredOutputs): void => {
    if (!Array.isArray(steps)) return;
    steps.forEach((step, index) => {
      if (!isRecord(step)) return;
      const stepPath = [...path, index];
      const templates = [...stepTemplates(step, stepPath), ...outputTemplates(step, stepPath)];
      for (const [fieldPath, template] of templates) {
        check(fieldPath, template, declared.stepContextShape);
      }
      declared.declare(declaredOutputs(step));
    });
  };

  const outputs = new DeclaredOutputs();
  checkSteps(spec.steps, ["steps"], outputs);

  if (isRecord(spec.changesetHooks)) {
    for (const event of ["onCIFailure", "onMergeConflict"]) {
      const hook = spec.changesetHooks[event];
      if (isRecord(hook)) {
        // A hook's steps see the outputs of the spec's steps and of the hook steps before them.
        checkSteps(
          hook.steps,
          ["changesetHooks", event, "steps"],
          new DeclaredOutputs(outputs.list),
        );
      }
    }
  }

  const template = spec.changesetTemplate;
  if (isRecord(template)) {
    const fields: [FieldPath, unknown][] = [
      [["changesetTemplate", "title"], template.title],
      [["changesetTemplate", "body"], template.body],
      [["changesetTemplate", "branch"], template.branch],
    ];
    if (isRecord(template.commit)) {
      fields.push([["changesetTemplate", "commit", "message"], template.commit.message]);
      if (isRecord(template.commit.author)) {
        fields.push([
          ["changesetTemplate", "commit", "author", "name"],
          template.commit.author.name,
        ]);
        fields.push([
          ["changesetTemplate", "commit", "author", "email"],
          template.commit.author.email,
        ]);
      }
    }
    for (const [path, value] of fields) {
      if (typeof value === "string" && containsTemplate(value)) {
        check(path, value, outputs.changesetContextShape);
      }
    }
  }
  return diagnostics;
}
