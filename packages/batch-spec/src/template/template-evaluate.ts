// Renders a parsed template against a context. The evaluator walks the syntax tree; it reads
// only own fields of plain data objects and calls only the functions in `templateFunctions`.
import { BatchSpecError } from "../batch-spec-error.ts";
import { closestMatch } from "../suggest.ts";
import {
  type TemplateFunction,
  TemplateFunctionFailure,
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
  isPlainObject,
  isTruthy,
  kindOf,
  ownField,
  printValue,
  type TemplateValue,
} from "./template-values.ts";
import {
  type IdentifierExpression,
  type LiteralExpression,
  type RangeNode,
  type RangeWalk,
  type TemplateProblem,
  TemplateWalker,
} from "./template-walker.ts";

/** The variables a template sees: `repository`, `outputs`, ... Plain data only. */
export type TemplateContext = { readonly [name: string]: TemplateValue };

type Scope = TemplateScope<TemplateValue>;

const maximumRangeIterations = 100_000;
/** Nested ranges multiply; this bounds the total work so no template can run for minutes. */
const maximumSteps = 5_000_000;
const maximumOutputLength = 16 * 1024 * 1024;

/** Thrown when a template reads a value that is only known once steps have run. */
export class DynamicValueReached extends Error {}

/** Walks a template with the context's data for values, writing its output; a problem throws. */
class Evaluator extends TemplateWalker<TemplateValue> {
  protected readonly walksPastProblems = false;
  protected readonly nothing = null;
  private readonly context: TemplateContext;
  private readonly dynamicRoots: ReadonlySet<string>;
  /** Past this many steps, `DynamicValueReached` instead of an error (deciding ahead of time). */
  private readonly staticBudget: number | undefined;
  private rendered = "";
  private steps = 0;

  constructor(
    context: TemplateContext,
    dynamicRoots: ReadonlySet<string> = new Set(),
    staticBudget?: number,
  ) {
    super();
    this.context = context;
    this.dynamicRoots = dynamicRoots;
    this.staticBudget = staticBudget;
  }

  render(nodes: readonly TemplateNode[]): string {
    this.walk(nodes, this.context as TemplateValue);
    return this.rendered;
  }

  protected problem(problem: TemplateProblem): never {
    throw new BatchSpecError(problem.code, problem.message, { offset: problem.offset });
  }

  protected literal(expression: LiteralExpression): TemplateValue {
    return expression.kind === "nil" ? null : expression.value;
  }

  protected root(name: string): { found: true; value: TemplateValue } | { found: false } {
    const root = ownField(this.context, name);
    return root.found ? { found: true, value: root.value } : { found: false };
  }

  protected truth(value: TemplateValue): boolean {
    return isTruthy(value);
  }

  protected override reading(identifier: IdentifierExpression): void {
    if (this.dynamicRoots.has(identifier.name)) throw new DynamicValueReached(identifier.name);
  }

  protected override enter(node: TemplateNode): void {
    this.count(node.start);
  }

  protected override text(node: Extract<TemplateNode, { kind: "text" }>): void {
    this.write(node.text, node.start);
  }

  protected override output(
    node: Extract<TemplateNode, { kind: "output" }>,
    value: TemplateValue,
  ): void {
    if (node.pipeline.declarations.length === 0) this.write(printValue(value), node.start);
  }

  private write(text: string, offset: number): void {
    this.rendered += text;
    if (this.rendered.length > maximumOutputLength) {
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

  protected rangeOver(collection: TemplateValue, node: RangeNode): RangeWalk<TemplateValue> {
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
    return {
      entries: entries.slice(0, maximumRangeIterations),
      otherwise: entries.length === 0,
    };
  }

  protected apply(
    identifier: IdentifierExpression,
    callable: TemplateFunction,
    operands: readonly TemplateExpression[],
    scope: Scope,
    piped: TemplateValue | undefined,
  ): TemplateValue {
    if (identifier.name === "and" || identifier.name === "or") {
      return this.lazyLogic(identifier.name, operands, scope, piped);
    }
    const values = operands.map((operand) => this.operand(operand, scope));
    if (piped !== undefined) values.push(piped);
    return this.invoke(identifier.name, callable, values, identifier.start);
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

  protected unknownIdentifier(identifier: IdentifierExpression, hasArguments: boolean): never {
    const { name, start: offset } = identifier;
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

  private invoke(
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

  protected fields(
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
