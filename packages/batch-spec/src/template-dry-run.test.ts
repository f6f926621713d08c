// biome-ignore-all lint/suspicious/noTemplateCurlyInString: batch spec templates use ${{ }}, and they are what these tests are about
import { describe, expect, it, vi } from "vitest";
import { formatDiagnostic } from "./diagnostics.ts";
import type { TemplateShape } from "./template/template-functions.ts";
import { dryRunTemplates } from "./template-dry-run.ts";

const checked = vi.hoisted(() => [] as { template: string; shape: TemplateShape }[]);

vi.mock("./template/template-check.ts", async (importOriginal) => {
  const original = await importOriginal<typeof import("./template/template-check.ts")>();
  return {
    ...original,
    checkTemplate: (template: string, shape: TemplateShape) => {
      checked.push({ template, shape });
      return original.checkTemplate(template, shape);
    },
  };
});

function problems(spec: unknown): string[] {
  return dryRunTemplates(spec, { file: "spec.yaml" }).map((diagnostic) =>
    formatDiagnostic(diagnostic).slice("spec.yaml:0:0: ".length),
  );
}

function outputsShapeOf(shape: TemplateShape): TemplateShape | undefined {
  return shape.kind === "object" ? shape.fields.outputs : undefined;
}

describe("dryRunTemplates", () => {
  it("checks every step against one outputs shape that grows, not one built afresh per step", () => {
    checked.length = 0;
    const steps = Array.from({ length: 50 }, (_, index) => ({
      run: `echo \${{ outputs.out${index} }}`,
      outputs: { [`out${index + 1}`]: { value: "${{ step.stdout }}" } },
    }));
    expect(problems({ steps })).toEqual([
      'steps[0].run: unknown output "outputs.out0": no earlier step defines an output named "out0"; declare it under a step\'s outputs',
    ]);
    const shapes = new Set(
      checked.filter(({ template }) => template.startsWith("echo")).map(({ shape }) => shape),
    );
    expect(shapes.size).toBe(1);
  });

  it("lets hook steps read the spec's outputs and their own hook's earlier ones, and the changeset template only the spec's", () => {
    checked.length = 0;
    const spec = {
      steps: [{ run: "go list", outputs: { modules: { value: "${{ step.stdout }}" } } }],
      changesetHooks: {
        onCIFailure: {
          steps: [
            { run: "echo ${{ outputs.modules }}", outputs: { failure: { value: "x" } } },
            { run: "echo ${{ outputs.failure }}" },
          ],
        },
        onMergeConflict: { steps: [{ run: "echo ${{ outputs.failure }}" }] },
      },
      changesetTemplate: {
        title: "${{ outputs.modules }} ${{ outputs.failure }}",
        branch: "b",
        commit: { message: "m" },
      },
    };
    expect(problems(spec)).toEqual([
      'changesetHooks.onMergeConflict.steps[0].run: unknown output "outputs.failure": no earlier step defines an output named "failure"; defined outputs: modules',
      'changesetTemplate.title: unknown output "outputs.failure": no step defines an output named "failure"; defined outputs: modules',
    ]);
    const hookShapes = checked
      .filter(({ template }) => template.startsWith("echo"))
      .map(({ shape }) => outputsShapeOf(shape));
    expect(hookShapes[0]).not.toBe(hookShapes[2]);
  });
});
