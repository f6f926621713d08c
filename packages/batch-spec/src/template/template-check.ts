// Checks a template against the shape of its context without running it: every variable must
// exist, every function must be known and called with the right number of arguments. This is
// what `deckhand batch validate` uses to catch a typo before hundreds of workspaces run.
import { BatchSpecError } from "../batch-spec-error.ts";
import { compileGlob } from "../glob.ts";
import { closestMatch } from "../suggest.ts";
import {
  anyShape,
  numberShape,
  stringShape,
  type TemplateFunction,
  type TemplateShape,
  templateFunctionNames,
} from "./template-functions.ts";
import { fieldPath } from "./template-messages.ts";
import type { TemplateScope } from "./template-scope.ts";
import {
  type ParsedTemplate,
  parseTemplate,
  type TemplateExpression,
  type TemplateNode,
} from "./template-syntax.ts";
import {
  type IdentifierExpression,
  type LiteralExpression,
  type RangeNode,
  type RangeWalk,
  type TemplateProblem,
  TemplateWalker,
} from "./template-walker.ts";

export type { TemplateProblem } from "./template-walker.ts";

type ObjectShape = TemplateShape & { kind: "object" };

function kindName(shape: TemplateShape): string {
  switch (shape.kind) {
    case "object":
      return "map";
    case "nil":
      return "nil";
    default:
      return shape.kind;
  }
}

/**
 * Walks a template with shapes for values: every branch, every body once, every operand of a
 * call even when the call itself is wrong, so that one check reports every problem.
 */
class Checker extends TemplateWalker<TemplateShape> {
  readonly problems: TemplateProblem[] = [];
  protected readonly walksPastProblems = true;
  protected readonly nothing = anyShape;
  private readonly rootShape: ObjectShape;

  constructor(root: ObjectShape) {
    super();
    this.rootShape = root;
  }

  check(nodes: readonly TemplateNode[]): void {
    this.walk(nodes, this.rootShape);
  }

  protected problem(problem: TemplateProblem): TemplateShape {
    this.problems.push(problem);
    return anyShape;
  }

  protected literal(expression: LiteralExpression): TemplateShape {
    switch (expression.kind) {
      case "string":
        return stringShape;
      case "number":
        return numberShape;
      case "boolean":
        return { kind: "boolean" };
      case "nil":
        return { kind: "nil" };
    }
  }

  protected root(name: string): { found: true; value: TemplateShape } | { found: false } {
    const fields = this.rootShape.fields;
    return Object.hasOwn(fields, name) ? { found: true, value: fields[name]! } : { found: false };
  }

  protected truth(): undefined {
    return undefined;
  }

  protected rangeOver(collection: TemplateShape, node: RangeNode): RangeWalk<TemplateShape> {
    let element: TemplateShape = anyShape;
    let key: TemplateShape = anyShape;
    if (collection.kind === "list") {
      element = collection.element;
      key = numberShape;
    } else if (collection.kind === "number") {
      element = numberShape;
      key = numberShape;
    } else if (collection.kind === "object") {
      key = stringShape;
    } else if (collection.kind === "string" || collection.kind === "boolean") {
      this.problem({
        offset: node.pipeline.start,
        code: "template_error",
        message: `range needs a list, a map or a number, got a ${collection.kind}`,
      });
    }
    return { entries: [[key, element]], otherwise: true };
  }

  protected apply(
    identifier: IdentifierExpression,
    callable: TemplateFunction,
    operands: readonly TemplateExpression[],
    scope: TemplateScope<TemplateShape>,
    piped: TemplateShape | undefined,
  ): TemplateShape {
    const shapes = operands.map((operand) => this.operand(operand, scope));
    if (piped !== undefined) shapes.push(piped);
    callable.argumentKinds.forEach((expected, position) => {
      const actual = shapes[position];
      if (actual === undefined || expected === "any" || actual.kind === "any") return;
      if (actual.kind !== expected) {
        this.problem({
          offset: operands[position]?.start ?? identifier.start,
          code: "template_error",
          message: `${identifier.name}'s argument ${position + 1} must be a ${expected}, got a ${kindName(actual)} (${callable.usage})`,
        });
      }
    });
    if (identifier.name === "matches") {
      const pattern = operands[1];
      if (pattern?.kind === "string") {
        try {
          compileGlob(pattern.value);
        } catch (error) {
          if (!(error instanceof BatchSpecError)) throw error;
          this.problem({ offset: pattern.start, code: "template_error", message: error.message });
        }
      }
    }
    return callable.result(shapes);
  }

  protected unknownIdentifier(
    expression: IdentifierExpression,
    hasArguments: boolean,
  ): TemplateShape {
    const roots = Object.keys(this.rootShape.fields);
    if (hasArguments && expression.fields.length === 0) {
      const suggestion = closestMatch(expression.name, templateFunctionNames);
      const hint =
        suggestion === undefined
          ? `; available functions: ${templateFunctionNames.join(", ")}`
          : `; did you mean "${suggestion}"?`;
      return this.problem({
        offset: expression.start,
        code: "template_unknown_function",
        message: `unknown function "${expression.name}"${hint}`,
      });
    }
    const candidates =
      expression.fields.length === 0 ? [...roots, ...templateFunctionNames] : roots;
    const suggestion = closestMatch(expression.name, candidates);
    const hint =
      suggestion === undefined
        ? `; available here: ${roots.join(", ")}`
        : `; did you mean "${fieldPath(suggestion, expression.fields)}"?`;
    return this.problem({
      offset: expression.start,
      code: "template_unknown_variable",
      message: `unknown variable "${fieldPath(expression.name, expression.fields)}"${hint}`,
    });
  }

  protected fields(
    shape: TemplateShape,
    name: string,
    fields: readonly string[],
    offset: number,
  ): TemplateShape {
    let current = shape;
    for (let position = 0; position < fields.length; position += 1) {
      const field = fields[position]!;
      if (current.kind === "any") return anyShape;
      if (current.kind === "object") {
        if (Object.hasOwn(current.fields, field)) {
          current = current.fields[field]!;
          continue;
        }
        const full = fieldPath(name, fields.slice(0, position + 1));
        if (current.describeMissing !== undefined) {
          return this.problem({
            offset,
            code: "template_unknown_variable",
            message: current.describeMissing(full, field),
          });
        }
        const known = Object.keys(current.fields);
        const suggestion = closestMatch(field, known);
        const hint =
          suggestion === undefined
            ? `; ${fieldPath(name, fields.slice(0, position))} has ${known.join(", ")}`
            : `; did you mean "${fieldPath(name, [...fields.slice(0, position), suggestion])}"?`;
        return this.problem({
          offset,
          code: "template_unknown_variable",
          message: `unknown variable "${full}"${hint}`,
        });
      }
      const owner = fieldPath(name, fields.slice(0, position));
      const outputHint =
        name === "outputs" && position === 1
          ? '; set "format: json" or "format: yaml" on the output to read its fields'
          : "";
      return this.problem({
        offset,
        code: "template_error",
        message: `"${owner}" is a ${kindName(current)} and has no field "${field}"${outputHint}`,
      });
    }
    return current;
  }
}

/**
 * Checks a template against a context shape and returns every problem found (an empty list
 * when the template is fine). Syntax errors are returned as a single `template_syntax` problem.
 */
export function checkTemplate(
  template: string | ParsedTemplate,
  shape: TemplateShape,
): TemplateProblem[] {
  let parsed: ParsedTemplate;
  try {
    parsed = typeof template === "string" ? parseTemplate(template) : template;
  } catch (error) {
    if (error instanceof BatchSpecError) {
      return [{ offset: error.offset ?? 0, code: "template_syntax", message: error.message }];
    }
    throw error;
  }
  if (shape.kind !== "object")
    throw new BatchSpecError("invalid_argument", "a template context shape must be an object");
  const checker = new Checker(shape);
  checker.check(parsed.nodes);
  return checker.problems;
}
