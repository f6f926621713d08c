// The canonical form of a validated spec: one spelling for everything that has two.
import type {
  BatchSpec,
  BatchSpecInput,
  HookStep,
  HookStepInput,
  Step,
  StepInput,
} from "./batch-spec-schema.ts";

/**
 * A step with `image` folded into `container` and its fields in one fixed order, so that the
 * two spellings give identical objects (and identical JSON).
 */
export function canonicalStep(step: StepInput): Step;
export function canonicalStep(step: HookStepInput): HookStep;
export function canonicalStep(step: StepInput | HookStepInput): Step | HookStep {
  const canonical: HookStep = {};
  const container = step.container ?? step.image;
  if (step.run !== undefined) canonical.run = step.run;
  if (container !== undefined) canonical.container = container;
  if (step.codingAgent !== undefined) canonical.codingAgent = step.codingAgent;
  if (step.env !== undefined) canonical.env = step.env;
  if (step.files !== undefined) canonical.files = step.files;
  if (step.outputs !== undefined) canonical.outputs = step.outputs;
  if (step.mount !== undefined) canonical.mount = step.mount;
  if (step.if !== undefined) canonical.if = step.if;
  if ("maxAttempts" in step && step.maxAttempts !== undefined)
    canonical.maxAttempts = step.maxAttempts;
  return canonical;
}

/** The canonical spec: version set (default 1), images in `container`, `$schema` dropped. */
export function canonicalSpec(input: BatchSpecInput): BatchSpec {
  const { $schema: _schema, version, steps, changesetHooks, ...rest } = input;
  const spec: BatchSpec = { version: version ?? 1, ...rest };
  if (steps !== undefined) spec.steps = steps.map((step) => canonicalStep(step));
  if (changesetHooks !== undefined) {
    const hooks: NonNullable<BatchSpec["changesetHooks"]> = {};
    if (changesetHooks.onCIFailure !== undefined) {
      hooks.onCIFailure = {
        steps: changesetHooks.onCIFailure.steps.map((step) => canonicalStep(step)),
      };
    }
    if (changesetHooks.onMergeConflict !== undefined) {
      hooks.onMergeConflict = {
        steps: changesetHooks.onMergeConflict.steps.map((step) => canonicalStep(step)),
      };
    }
    spec.changesetHooks = hooks;
  }
  return spec;
}
