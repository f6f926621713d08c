// Messages that rendering a template and checking it both give. They come from one place so
// that `deckhand batch validate` reports a mistake in the words the run would fail with.
import type { TemplateFunction } from "./template-functions.ts";
import type { TemplateExpression } from "./template-syntax.ts";

/** `name.field.field`, as the template spells the reference. */
export function fieldPath(name: string, fields: readonly string[]): string {
  return [name, ...fields].join(".");
}

/** The expression as a message names it: quoted references, literals as written. */
export function describeExpression(expression: TemplateExpression): string {
  switch (expression.kind) {
    case "identifier":
    case "variable":
      return `"${fieldPath(expression.name, expression.fields)}"`;
    case "dot":
      return `"${expression.fields.length === 0 ? "." : `.${expression.fields.join(".")}`}"`;
    case "string":
      return JSON.stringify(expression.value);
    case "number":
    case "boolean":
      return String(expression.value);
    default:
      return "this value";
  }
}

/** For arguments given to something that is not a function (`.name "x"`). */
export function notAFunctionMessage(expression: TemplateExpression): string {
  return `${describeExpression(expression)} is not a function, so it takes no arguments; a call starts with the function name, as in "join LIST SEPARATOR"`;
}

/** For a `$name` read before any `$name := ...` declared it. */
export function undefinedVariableMessage(name: string): string {
  return `undefined variable "${name}": declare it first with "${name} := ..."`;
}

export function arityMessage(name: string, callable: TemplateFunction, count: number): string {
  const { minimumArguments: minimum, maximumArguments: maximum } = callable;
  const expected =
    maximum === undefined
      ? `at least ${minimum} argument${minimum === 1 ? "" : "s"}`
      : minimum === maximum
        ? `${minimum} argument${minimum === 1 ? "" : "s"}`
        : `${minimum} to ${maximum} arguments`;
  return `${name} takes ${expected} (${callable.usage}), got ${count}`;
}
