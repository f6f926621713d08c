// Renders a parsed template against a context. The evaluator walks the syntax tree; it reads
// only own fields of plain data objects and calls only the functions in `templateFunctions`.
import { BatchSpecError } from "../batch-spec-error.ts";
import { closestMatch } from "../suggest.ts";
import {
  acceptsArgumentCount,
  type TemplateFunction,
  TemplateFunctionFailure,
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
import {
  isPlainObject,
  isTruthy,
  kindOf,
  ownField,
  printValue,
  type TemplateValue,
} from "./template-values.ts";

/** The variables a template sees: `repository`, `outputs`, ... Plain data only. */
export type TemplateContext = { readonly [name: string]: TemplateValue };

type Scope = TemplateScope<TemplateValue>;

const maximumRangeIterations = 100_000;
/** Nested ranges multiply; this bounds the total work so no template can run for minutes. */
const maximumSteps = 5_000_000;
const maximumOutputLength = 16 * 1024 * 1024;

/** Thrown when a template reads a value that is only known once steps have run. */
export class DynamicValueReached extends Error {}

class Evaluator {
  private readonly context: TemplateContext;
  private readonly dynamicRoots: ReadonlySet<string>;
  /** Past this many steps, `DynamicValueReached` instead of an error (deciding ahead of time). */
  private readonly staticBudget: number | undefined;
  private output = "";
  private steps = 0;

  constructor(
    context: TemplateContext,
    dynamicRoots: ReadonlySet<string> = new Set(),
    staticBudget?: number,
  ) {
    this.context = context;
    this.dynamicRoots = dynamicRoots;
    this.staticBudget = staticBudget;
  }

  render(nodes: readonly TemplateNode[]): string {
    const root = new TemplateScope(this.context as TemplateValue, undefined);
    root.variables.set("$", this.context as TemplateValue);
    this.nodes(nodes, root);
    return this.output;
  }

  private write(text: string, offset: number): void {
    this.output += text;
    if (this.output.length > maximumOutputLength) {
      throw new BatchSpecError(
        "template_error",
        "template output is larger than 16 MiB; render less data",
        { offset },
      );
    }
  }

  private count(offset: number, work = 1): void {
    this.steps += work;
    if (this.staticBudget !== undefined && this.steps > this.staticBudget) {
      throw new DynamicValueReached();
    }
    if (this.steps > maximumSteps) {
      throw new BatchSpecError(
        "template_error",
        "the template does too much work (nested ranges?); simplify it",
        { offset },
      );
    }
  }

  private nodes(nodes: readonly TemplateNode[], scope: Scope): void {
    for (const node of nodes) {
      this.count(node.start);
      switch (node.kind) {
        case "text":
          this.write(node.text, node.start);
          break;
        case "output": {
          const value = this.pipeline(node.pipeline, scope);
          if (node.pipeline.declarations.length === 0) this.write(printValue(value), node.start);
          break;
        }
        case "if": {
          const inner = new TemplateScope(scope.dot, scope);
          const branch = node.branches.find((candidate) =>
            isTruthy(this.pipeline(candidate.condition, inner)),
          );
          if (branch !== undefined) this.nodes(branch.body, inner);
          else if (node.otherwise !== undefined) this.nodes(node.otherwise, inner);
          break;
        }
        case "with": {
          const value = this.pipeline(node.pipeline, new TemplateScope(scope.dot, scope), true);
          if (isTruthy(value)) this.nodes(node.body, new TemplateScope(value, scope));
          else if (node.otherwise !== undefined) this.nodes(node.otherwise, scope);
          break;
        }
        case "range":
          this.range(node, scope);
          break;
      }
    }
  }

  private range(node: Extract<TemplateNode, { kind: "range" }>, scope: Scope): void {
    const collection = this.pipeline(node.pipeline, scope, true);
    if (Array.isArray(collection) || typeof collection === "number") {
      this.count(
        node.start,
        Array.isArray(collection) ? collection.length : Math.max(0, collection),
      );
    }
    let entries: [TemplateValue, TemplateValue][];
    if (Array.isArray(collection)) {
      entries = collection.map((element, position) => [position, element as TemplateValue]);
    } else if (isPlainObject(collection)) {
      entries = Object.keys(collection)
        .sort()
        .map((key) => [key, collection[key] as TemplateValue]);
    } else if (typeof collection === "number" && Number.isInteger(collection)) {
      entries = Array.from(
        { length: Math.max(0, Math.min(collection, maximumRangeIterations)) },
        (_, i) => [i, i],
      );
    } else if (collection === null) {
      entries = [];
    } else {
      throw new BatchSpecError(
        "template_error",
        `range needs a list, a map or a number, got a ${kindOf(collection)}`,
        { offset: node.pipeline.start },
      );
    }
    if (entries.length === 0) {
      if (node.otherwise !== undefined) this.nodes(node.otherwise, scope);
      return;
    }
    for (const [key, element] of entries.slice(0, maximumRangeIterations)) {
      const inner = new TemplateScope(element, scope);
      inner.declareRange(node.pipeline.declarations, key, element);
      this.nodes(node.body, inner);
    }
  }

  /** Evaluates a pipeline; `deferDeclarations` leaves `$a, $b :=` to the caller (range). */
  private pipeline(
    pipeline: TemplatePipeline,
    scope: Scope,
    deferDeclarations = false,
  ): TemplateValue {
    let value: TemplateValue | undefined;
    for (const command of pipeline.commands) {
      value = this.command(command, scope, value);
    }
    if (!deferDeclarations && pipeline.declarations.length > 0) {
      for (const name of pipeline.declarations) scope.variables.set(name, value ?? null);
    }
    return value ?? null;
  }

  private command(
    command: TemplateCommand,
    scope: Scope,
    piped: TemplateValue | undefined,
  ): TemplateValue {
    const [first, ...rest] = command.operands;
    if (first!.kind === "identifier" && this.dynamicRoots.has(first!.name)) {
      throw new DynamicValueReached(first!.name);
    }
    if (first!.kind === "identifier" && !Object.hasOwn(this.context, first!.name)) {
      const callable = this.function(
        first!.name,
        first!.start,
        rest.length > 0 || piped !== undefined,
      );
      const argumentCount = rest.length + (piped === undefined ? 0 : 1);
      this.checkArity(first!.name, callable, argumentCount, first!.start);
      let result: TemplateValue;
      if (first!.name === "and" || first!.name === "or") {
        result = this.lazyLogic(first!.name, rest, scope, piped);
      } else {
        const values = rest.map((operand) => this.operand(operand, scope));
        if (piped !== undefined) values.push(piped);
        result = this.call(first!.name, callable, values, first!.start);
      }
      return this.fields(result, first!.name, first!.fields, first!.start);
    }
    if (rest.length > 0 || piped !== undefined) {
      const at = rest[0]?.start ?? first!.start;
      throw new BatchSpecError("template_error", notAFunctionMessage(first!), { offset: at });
    }
    return this.operand(first!, scope);
  }

  private lazyLogic(
    name: "and" | "or",
    operands: readonly TemplateExpression[],
    scope: Scope,
    piped: TemplateValue | undefined,
  ): TemplateValue {
    let last: TemplateValue = null;
    const thunks: (() => TemplateValue)[] = operands.map(
      (operand) => () => this.operand(operand, scope),
    );
    if (piped !== undefined) thunks.push(() => piped);
    for (const thunk of thunks) {
      last = thunk();
      if (name === "and" ? !isTruthy(last) : isTruthy(last)) return last;
    }
    return last;
  }

  private function(name: string, offset: number, hasArguments: boolean): TemplateFunction {
    const callable = templateFunctions.get(name);
    if (callable !== undefined) return callable;
    const roots = Object.keys(this.context);
    const suggestion = closestMatch(
      name,
      hasArguments ? templateFunctionNames : [...roots, ...templateFunctionNames],
    );
    const hint = suggestion === undefined ? "" : `; did you mean "${suggestion}"?`;
    if (hasArguments) {
      throw new BatchSpecError("template_unknown_function", `unknown function "${name}"${hint}`, {
        offset,
      });
    }
    throw new BatchSpecError("template_unknown_variable", `unknown variable "${name}"${hint}`, {
      offset,
    });
  }

  private checkArity(
    name: string,
    callable: TemplateFunction,
    count: number,
    offset: number,
  ): void {
    if (!acceptsArgumentCount(callable, count)) {
      throw new BatchSpecError("template_error", arityMessage(name, callable, count), { offset });
    }
  }

  private call(
    name: string,
    callable: TemplateFunction,
    values: TemplateValue[],
    offset: number,
  ): TemplateValue {
    try {
      return callable.call(values);
    } catch (error) {
      if (error instanceof TemplateFunctionFailure) {
        throw new BatchSpecError("template_error", `${name}: ${error.message}`, {
          offset,
          cause: error,
        });
      }
      if (error instanceof BatchSpecError) {
        throw new BatchSpecError(error.code, `${name}: ${error.message}`, { offset, cause: error });
      }
      throw error;
    }
  }

  private operand(expression: TemplateExpression, scope: Scope): TemplateValue {
    switch (expression.kind) {
      case "string":
      case "number":
      case "boolean":
        return expression.value;
      case "nil":
        return null;
      case "dot":
        return this.fields(scope.dot, "", expression.fields, expression.start);
      case "variable": {
        const found = scope.lookup(expression.name);
        if (!found.found) {
          throw new BatchSpecError(
            "template_unknown_variable",
            undefinedVariableMessage(expression.name),
            { offset: expression.start },
          );
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
        if (this.dynamicRoots.has(expression.name)) throw new DynamicValueReached(expression.name);
        const root = ownField(this.context, expression.name);
        if (root.found) {
          return this.fields(root.value, expression.name, expression.fields, expression.start);
        }
        const callable = this.function(expression.name, expression.start, false);
        this.checkArity(expression.name, callable, 0, expression.start);
        const result = this.call(expression.name, callable, [], expression.start);
        return this.fields(result, expression.name, expression.fields, expression.start);
      }
    }
  }

  private fields(
    value: TemplateValue,
    name: string,
    fields: readonly string[],
    offset: number,
  ): TemplateValue {
    let current = value;
    for (let position = 0; position < fields.length; position += 1) {
      const field = fields[position]!;
      const next = ownField(current, field);
      if (next.found) {
        current = next.value;
        continue;
      }
      const path = fieldPath(name, fields.slice(0, position + 1));
      if (isPlainObject(current)) {
        const suggestion = closestMatch(field, Object.keys(current));
        const hint =
          suggestion === undefined
            ? ""
            : `; did you mean "${fieldPath(name, [...fields.slice(0, position), suggestion])}"?`;
        throw new BatchSpecError("template_unknown_variable", `unknown variable "${path}"${hint}`, {
          offset,
        });
      }
      throw new BatchSpecError(
        "template_error",
        `"${fieldPath(name, fields.slice(0, position))}" is a ${kindOf(current)} and has no field "${field}"`,
        { offset },
      );
    }
    return current;
  }
}

/**
 * Renders a template with the given context. Throws `BatchSpecError` (codes `template_syntax`,
 * `template_unknown_variable`, `template_unknown_function`, `template_error`) whose `offset`
 * points into the template.
 */
export function renderTemplate(
  template: string | ParsedTemplate,
  context: TemplateContext,
): string {
  const parsed = typeof template === "string" ? parseTemplate(template) : template;
  return new Evaluator(context).render(parsed.nodes);
}

/**
 * Renders with some context roots treated as not yet known: reading one throws
 * `DynamicValueReached`. `and` and `or` stop early, so `and false outputs.x` is still static.
 * With `staticBudget`, a template that takes more steps than that throws `DynamicValueReached`
 * too: it is left to be decided when it runs, rather than making whoever decides ahead of time
 * (the server resolving a spec) wait.
 */
export function renderWithDynamicRoots(
  template: ParsedTemplate,
  context: TemplateContext,
  dynamicRoots: ReadonlySet<string>,
  staticBudget?: number,
): string {
  return new Evaluator(context, dynamicRoots, staticBudget).render(template.nodes);
}
