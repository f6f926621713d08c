// Evaluates a step's `if:` before anything runs, where it depends only on what is known up
// front (the repository and the batch change), so steps that will be skipped are known early
// and do not count towards a workspace's work or its cache key.
import { BatchSpecError } from "./batch-spec-error.ts";
import {
  createStepTemplateContext,
  type TemplateBatchChange,
  type TemplateRepository,
} from "./template/template-context.ts";
import { DynamicValueReached, renderWithDynamicRoots } from "./template/template-evaluate.ts";
import { containsTemplate, parseTemplate } from "./template/template-syntax.ts";

/**
 * The template steps a condition may take to be decided ahead of time (a comparison takes a
 * handful; this is some tens of milliseconds of work). Past it the condition is "dynamic" and
 * is decided when the step runs, so a spec's conditions cannot hold up the server that resolves
 * it (a full template budget is seconds of work, and there is one condition per step and
 * repository).
 */
export const STATIC_CONDITION_STEP_BUDGET = 100_000;

/** Context roots whose values exist only once steps have run. */
const dynamicRoots: ReadonlySet<string> = new Set(["outputs", "previous_step", "step", "steps"]);

export interface StaticConditionInput {
  repository: TemplateRepository;
  batchChange: TemplateBatchChange;
}

/**
 * True or false when the condition can be decided from the repository and batch change alone,
 * "dynamic" when it reads step results or outputs, or takes more than
 * STATIC_CONDITION_STEP_BUDGET template steps. No condition means true; like src-cli, a
 * condition holds when it renders to "true" (surrounding whitespace ignored). A template error
 * other than reading a dynamic value is thrown as `BatchSpecError`.
 */
export function evaluateStaticCondition(
  condition: boolean | string | undefined,
  input: StaticConditionInput,
): boolean | "dynamic" {
  if (condition === undefined) return true;
  if (typeof condition === "boolean") return condition;
  if (!containsTemplate(condition)) return condition.trim() === "true";
  const parsed = parseTemplate(condition);
  // Only the static roots: `.steps` or `$.outputs` then fail as unknown, and count as dynamic.
  const { repository, batch_change } = createStepTemplateContext(input);
  const context = { repository: repository!, batch_change: batch_change! };
  try {
    return (
      renderWithDynamicRoots(parsed, context, dynamicRoots, STATIC_CONDITION_STEP_BUDGET).trim() ===
      "true"
    );
  } catch (error) {
    if (error instanceof DynamicValueReached) return "dynamic";
    // `.outputs` and `$.steps` reach step results through the root; those are dynamic too.
    if (error instanceof BatchSpecError && error.code === "template_unknown_variable") {
      const mentioned = [...dynamicRoots].some((root) => error.message.includes(`.${root}`));
      if (mentioned) return "dynamic";
    }
    throw error;
  }
}
