// Checks a template against the shape of its context without running it: every variable must
// exist, every function must be known and called with the right number of arguments. This is
// what `deckhand batch validate` uses to catch a typo before hundreds of workspaces run.
import { BatchSpecError } from "../batch-spec-error.ts";
import { compileGlob } from "../glob.ts";
import { closestMatch } from "../suggest.ts";
import {
  acceptsArgumentCount,
  anyShape,
  numberShape,
  stringShape,
  type TemplateShape,
  templateFunctionNames,
  templateFunctions,
} from "./template-functions.ts";
import {
  arityMessage,
  fieldPath,
  notAFunctionMessage,
  undefinedVariableMessage,
} from "./template-messages.ts";
import { TemplateScope } from "./template-scope.ts";
import {
  type ParsedTemplate,
  parseTemplate,
  type TemplateCommand,
  type TemplateExpression,
  type TemplateNode,
  type TemplatePipeline,
} from "./template-syntax.ts";

/** One problem in a template; `offset` is where in the template string it is. */
export interface TemplateProblem {
  offset: number;
  code:
    | "template_syntax"
    | "template_unknown_variable"
    | "template_unknown_function"
    | "template_error";
  message: string;
}

type ShapeScope = TemplateScope<TemplateShape>;

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

class Checker {
  readonly problems: TemplateProblem[] = [];
  private readonly root: TemplateShape & { kind: "object" };

  constructor(root: TemplateShape & { kind: "object" }) {
    this.root = root;
  }

  check(nodes: readonly TemplateNode[]): void {
    const scope = new TemplateScope<TemplateShape>(this.root, undefined);
    scope.variables.set("$", this.root);
    this.nodes(nodes, scope);
  }

  private report(problem: TemplateProblem): TemplateShape {
    this.problems.push(problem);
    return anyShape;
  }

  private nodes(nodes: readonly TemplateNode[], scope: ShapeScope): void {
    for (const node of nodes) {
      switch (node.kind) {
        case "text":
          break;
        case "output":
          this.pipeline(node.pipeline, scope);
          break;
        case "if": {
          const inner = new TemplateScope(scope.dot, scope);
          for (const branch of node.branches) {
            this.pipeline(branch.condition, inner);
            this.nodes(branch.body, inner);
          }
          if (node.otherwise !== undefined) this.nodes(node.otherwise, inner);
          break;
        }
        case "with": {
          const value = this.pipeline(node.pipeline, new TemplateScope(scope.dot, scope), true);
          this.nodes(node.body, new TemplateScope(value, scope));
          if (node.otherwise !== undefined) this.nodes(node.otherwise, scope);
          break;
        }
        case "range": {
          const collection = this.pipeline(node.pipeline, scope, true);
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
            this.report({
              offset: node.pipeline.start,
              code: "template_error",
              message: `range needs a list, a map or a number, got a ${collection.kind}`,
            });
          }
          const inner = new TemplateScope(element, scope);
          inner.declareRange(node.pipeline.declarations, key, element);
          this.nodes(node.body, inner);
          if (node.otherwise !== undefined) this.nodes(node.otherwise, scope);
          break;
        }
      }
    }
  }

  private pipeline(
    pipeline: TemplatePipeline,
    scope: ShapeScope,
    deferDeclarations = false,
  ): TemplateShape {
    let shape: TemplateShape | undefined;
    for (const command of pipeline.commands) shape = this.command(command, scope, shape);
    if (!deferDeclarations) {
      for (const name of pipeline.declarations) scope.variables.set(name, shape ?? anyShape);
    }
    return shape ?? anyShape;
  }

  private command(
    command: TemplateCommand,
    scope: ShapeScope,
    piped: TemplateShape | undefined,
  ): TemplateShape {
    const [first, ...rest] = command.operands;
    if (first!.kind === "identifier" && !Object.hasOwn(this.root.fields, first!.name)) {
      const callable = templateFunctions.get(first!.name);
      const hasArguments = rest.length > 0 || piped !== undefined;
      if (callable === undefined) {
        for (const operand of rest) this.operand(operand, scope);
        return this.unknownIdentifier(first!, hasArguments);
      }
      const shapes = rest.map((operand) => this.operand(operand, scope));
      if (piped !== undefined) shapes.push(piped);
      const count = shapes.length;
      if (!acceptsArgumentCount(callable, count)) {
        return this.report({
          offset: first!.start,
          code: "template_error",
          message: arityMessage(first!.name, callable, count),
        });
      }
      const operands = [...rest];
      callable.argumentKinds.forEach((expected, position) => {
        const actual = shapes[position];
        if (actual === undefined || expected === "any" || actual.kind === "any") return;
        if (actual.kind !== expected) {
          const operand = operands[position];
          this.report({
            offset: operand?.start ?? first!.start,
            code: "template_error",
            message: `${first!.name}'s argument ${position + 1} must be a ${expected}, got a ${kindName(actual)} (${callable.usage})`,
          });
        }
      });
      if (first!.name === "matches") {
        const pattern = operands[1];
        if (pattern?.kind === "string") {
          try {
            compileGlob(pattern.value);
          } catch (error) {
            if (!(error instanceof BatchSpecError)) throw error;
            this.report({ offset: pattern.start, code: "template_error", message: error.message });
          }
        }
      }
      return this.fields(callable.result(shapes), first!.name, first!.fields, first!.start);
    }
    if (rest.length > 0 || piped !== undefined) {
      this.operand(first!, scope);
      return this.report({
        offset: rest[0]?.start ?? first!.start,
        code: "template_error",
        message: notAFunctionMessage(first!),
      });
    }
    return this.operand(first!, scope);
  }

  private unknownIdentifier(
    expression: TemplateExpression & { kind: "identifier" },
    hasArguments: boolean,
  ): TemplateShape {
    const roots = Object.keys(this.root.fields);
    if (hasArguments && expression.fields.length === 0) {
      const suggestion = closestMatch(expression.name, templateFunctionNames);
      const hint =
        suggestion === undefined
          ? `; available functions: ${templateFunctionNames.join(", ")}`
          : `; did you mean "${suggestion}"?`;
      return this.report({
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
    return this.report({
      offset: expression.start,
      code: "template_unknown_variable",
      message: `unknown variable "${fieldPath(expression.name, expression.fields)}"${hint}`,
    });
  }

  private operand(expression: TemplateExpression, scope: ShapeScope): TemplateShape {
    switch (expression.kind) {
      case "string":
        return stringShape;
      case "number":
        return numberShape;
      case "boolean":
        return { kind: "boolean" };
      case "nil":
        return { kind: "nil" };
      case "dot":
        return this.fields(scope.dot, "", expression.fields, expression.start);
      case "variable": {
        const found = scope.lookup(expression.name);
        if (!found.found) {
          return this.report({
            offset: expression.start,
            code: "template_unknown_variable",
            message: undefinedVariableMessage(expression.name),
          });
        }
        return this.fields(found.value, expression.name, expression.fields, expression.start);
      }
      case "group":
        return this.fields(
          this.pipeline(expression.pipeline, scope),
          "(...)",
          expression.fields,
          expression.start,
        );
      case "identifier": {
        const root = this.root.fields[expression.name];
        if (root !== undefined && Object.hasOwn(this.root.fields, expression.name)) {
          return this.fields(root, expression.name, expression.fields, expression.start);
        }
        const callable = templateFunctions.get(expression.name);
        if (callable === undefined) return this.unknownIdentifier(expression, false);
        if (callable.minimumArguments > 0) {
          return this.report({
            offset: expression.start,
            code: "template_error",
            message: arityMessage(expression.name, callable, 0),
          });
        }
        return this.fields(
          callable.result([]),
          expression.name,
          expression.fields,
          expression.start,
        );
      }
    }
  }

  private fields(
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
          return this.report({
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
        return this.report({
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
      return this.report({
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
