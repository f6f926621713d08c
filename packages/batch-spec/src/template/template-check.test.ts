// biome-ignore-all lint/suspicious/noTemplateCurlyInString: batch spec templates use ${{ }}, and they are what these tests are about
import { describe, expect, it } from "vitest";
import { checkTemplate } from "./template-check.ts";
import { changesetContextShape, stepContextShape } from "./template-context.ts";

const step = stepContextShape([
  { name: "text", format: undefined },
  { name: "data", format: "json" },
]);

describe("checkTemplate: dry-run against the context shape", () => {
  it("accepts every variable and function of the step context", () => {
    expect(
      checkTemplate(
        `\${{ join repository.search_result_paths " " }} \${{ repository.branch }} \${{ batch_change.name }}
\${{ batch_change.description }} \${{ previous_step.stdout }} \${{ step.stderr }} \${{ steps.path }}
\${{ join steps.renamed_files "," }} \${{ outputs.text }} \${{ outputs.data.deep.field }}
\${{ if matches repository.name "a*" }}\${{ range $f := step.added_files }}\${{ $f }}\${{ end }}\${{ end }}
\${{ index previous_step.deleted_files 0 }} \${{ join_if "," "a" }} \${{ split "a" "," }}`,
        step,
      ),
    ).toEqual([]);
  });

  it("reports several problems in one template, each at its offset", () => {
    expect(checkTemplate("${{ nope }} ${{ repository.nam }} ${{ frobnicate 1 }}", step)).toEqual([
      {
        offset: 4,
        code: "template_unknown_variable",
        message:
          'unknown variable "nope"; available here: repository, batch_change, outputs, previous_step, step, steps',
      },
      {
        offset: 16,
        code: "template_unknown_variable",
        message: 'unknown variable "repository.nam"; did you mean "repository.name"?',
      },
      {
        offset: 38,
        code: "template_unknown_function",
        message:
          'unknown function "frobnicate"; available functions: and, eq, ge, gt, index, join, join_if, le, len, lt, matches, ne, not, or, print, printf, println, replace, shellquote_join, shellquote_split, slice, split',
      },
    ]);
  });

  it("catches a string passed where join needs a list", () => {
    expect(checkTemplate('${{ join repository.name "," }}', step)).toEqual([
      {
        offset: 9,
        code: "template_error",
        message: "join's argument 1 must be a list, got a string (join LIST SEPARATOR)",
      },
    ]);
  });

  it("catches arguments given to something that is not a function", () => {
    expect(checkTemplate('${{ repository.name "x" }}', step)).toEqual([
      {
        offset: 20,
        code: "template_error",
        message:
          '"repository.name" is not a function, so it takes no arguments; a call starts with the function name, as in "join LIST SEPARATOR"',
      },
    ]);
  });

  it("catches undeclared $variables", () => {
    expect(checkTemplate("${{ $x }}", step)).toEqual([
      {
        offset: 4,
        code: "template_unknown_variable",
        message: 'undefined variable "$x": declare it first with "$x := ..."',
      },
    ]);
  });

  it("gives changeset templates no previous_step", () => {
    expect(checkTemplate("${{ previous_step.stdout }}", changesetContextShape([]))).toEqual([
      {
        offset: 4,
        code: "template_unknown_variable",
        message:
          'unknown variable "previous_step.stdout"; available here: repository, batch_change, outputs, steps, batch_change_link',
      },
    ]);
  });

  it("returns a syntax error as one problem", () => {
    expect(checkTemplate("${{ end }}", step)).toEqual([
      {
        offset: 0,
        code: "template_syntax",
        message: '"end" without a matching "if", "range" or "with"',
      },
    ]);
  });
});
