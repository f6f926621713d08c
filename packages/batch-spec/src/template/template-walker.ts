// The one walk of a template's syntax tree, shared by the checker (whose values are shapes:
// what a template could read, checked before anything runs) and the evaluator (whose values are
// the context's data). Both resolve pipelines, function calls, variables and fields by the same
// rules; each says, through the hooks below, what its values are and what it does at each node.
import {
  acceptsArgumentCount,
  type TemplateFunction,
  templateFunctions,
} from "./template-functions.ts";
import {
  arityMessage,
  notAFunctionMessage,
  undefinedVariableMessage,
} from "./template-messages.ts";
import { TemplateScope } from "./template-scope.ts";
import type {
  TemplateCommand,
  TemplateExpression,
  TemplateNode,
  TemplatePipeline,
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

export type IdentifierExpression = Extract<TemplateExpression, { kind: "identifier" }>;
export type LiteralExpression = Extract<
  TemplateExpression,
  { kind: "string" | "number" | "boolean" | "nil" }
>;
export type RangeNode = Extract<TemplateNode, { kind: "range" }>;

/** What a `range` walks: its (key, element) pairs, and whether its `else` is walked too. */
export interface RangeWalk<Value> {
  entries: readonly (readonly [Value, Value])[];
  otherwise: boolean;
}

export abstract class TemplateWalker<Value> {
  /**
   * Whether the walk goes on past a problem (the checker reports every problem, so it also walks
   * what a failed call was given) or ends at the first (the evaluator throws it).
   */
  protected abstract readonly walksPastProblems: boolean;

  /** A problem: noted, with the value to go on with; or thrown. */
  protected abstract problem(problem: TemplateProblem): Value;

  /** What an empty pipeline gives (`{{$x := }}`, never written). */
  protected abstract readonly nothing: Value;

  protected abstract literal(expression: LiteralExpression): Value;

  /** The context's root `name` (`repository`, `outputs`), if it has one. */
  protected abstract root(name: string): { found: true; value: Value } | { found: false };

  /** `value.a.b`: `name` and `fields` say how it was written, for messages. */
  protected abstract fields(
    value: Value,
    name: string,
    fields: readonly string[],
    offset: number,
  ): Value;

  /** An identifier that is neither a root of the context nor a function. */
  protected abstract unknownIdentifier(
    expression: IdentifierExpression,
    hasArguments: boolean,
  ): Value;

  /** Calls a known function with an accepted number of arguments: its operands, then `piped`. */
  protected abstract apply(
    identifier: IdentifierExpression,
    callable: TemplateFunction,
    operands: readonly TemplateExpression[],
    scope: TemplateScope<Value>,
    piped: Value | undefined,
  ): Value;

  /** Whether `if` or `with` takes its body for a value: known, or not (both ways are walked). */
  protected abstract truth(value: Value): boolean | undefined;

  protected abstract rangeOver(collection: Value, node: RangeNode): RangeWalk<Value>;

  /** Before each node. */
  protected enter(_node: TemplateNode): void {}

  protected text(_node: Extract<TemplateNode, { kind: "text" }>): void {}

  protected output(_node: Extract<TemplateNode, { kind: "output" }>, _value: Value): void {}

  /** Before an identifier is read, as a root or as a function. */
  protected reading(_identifier: IdentifierExpression): void {}

  /** Walks a whole template with `root` as both `.` and `$`. */
  protected walk(nodes: readonly TemplateNode[], root: Value): void {
    const scope = new TemplateScope<Value>(root, undefined);
    scope.variables.set("$", root);
    this.nodes(nodes, scope);
  }

  private nodes(nodes: readonly TemplateNode[], scope: TemplateScope<Value>): void {
    for (const node of nodes) {
      this.enter(node);
      switch (node.kind) {
        case "text":
          this.text(node);
          break;
        case "output":
          this.output(node, this.pipeline(node.pipeline, scope));
          break;
        case "if": {
          const inner = new TemplateScope(scope.dot, scope);
          const taken = node.branches.some((branch) => {
            const truth = this.truth(this.pipeline(branch.condition, inner));
            if (truth !== false) this.nodes(branch.body, inner);
            return truth === true;
          });
          if (!taken && node.otherwise !== undefined) this.nodes(node.otherwise, inner);
          break;
        }
        case "with": {
          const value = this.pipeline(node.pipeline, new TemplateScope(scope.dot, scope), true);
          const truth = this.truth(value);
          if (truth !== false) this.nodes(node.body, new TemplateScope(value, scope));
          if (truth !== true && node.otherwise !== undefined) this.nodes(node.otherwise, scope);
          break;
        }
        case "range": {
          const walk = this.rangeOver(this.pipeline(node.pipeline, scope, true), node);
          for (const [key, element] of walk.entries) {
            const inner = new TemplateScope(element, scope);
            inner.declareRange(node.pipeline.declarations, key, element);
            this.nodes(node.body, inner);
          }
          if (walk.otherwise && node.otherwise !== undefined) this.nodes(node.otherwise, scope);
          break;
        }
      }
    }
  }

  /** A pipeline's value; `deferDeclarations` leaves `$a, $b :=` to the caller (range, with). */
  protected pipeline(
    pipeline: TemplatePipeline,
    scope: TemplateScope<Value>,
    deferDeclarations = false,
  ): Value {
    let value: Value | undefined;
    for (const command of pipeline.commands) value = this.command(command, scope, value);
    if (!deferDeclarations) {
      for (const name of pipeline.declarations) scope.variables.set(name, value ?? this.nothing);
    }
    return value ?? this.nothing;
  }

  private command(
    command: TemplateCommand,
    scope: TemplateScope<Value>,
    piped: Value | undefined,
  ): Value {
    const [first, ...rest] = command.operands as [TemplateExpression, ...TemplateExpression[]];
    if (first.kind === "identifier") {
      this.reading(first);
      if (!this.root(first.name).found) return this.call(first, rest, scope, piped);
    }
    if (rest.length > 0 || piped !== undefined) {
      if (this.walksPastProblems) this.operand(first, scope);
      return this.problem({
        offset: rest[0]?.start ?? first.start,
        code: "template_error",
        message: notAFunctionMessage(first),
      });
    }
    return this.operand(first, scope);
  }

  /** `name operand...`, with `piped` as its last argument. */
  private call(
    identifier: IdentifierExpression,
    operands: readonly TemplateExpression[],
    scope: TemplateScope<Value>,
    piped: Value | undefined,
  ): Value {
    const callable = templateFunctions.get(identifier.name);
    const count = operands.length + (piped === undefined ? 0 : 1);
    if (callable === undefined || !acceptsArgumentCount(callable, count)) {
      // What the call was given may hold problems of its own, found before the call's.
      if (this.walksPastProblems) for (const operand of operands) this.operand(operand, scope);
      if (callable === undefined) return this.unknownIdentifier(identifier, count > 0);
      return this.problem({
        offset: identifier.start,
        code: "template_error",
        message: arityMessage(identifier.name, callable, count),
      });
    }
    const result = this.apply(identifier, callable, operands, scope, piped);
    return this.fields(result, identifier.name, identifier.fields, identifier.start);
  }

  protected operand(expression: TemplateExpression, scope: TemplateScope<Value>): Value {
    switch (expression.kind) {
      case "string":
      case "number":
      case "boolean":
      case "nil":
        return this.literal(expression);
      case "dot":
        return this.fields(scope.dot, "", expression.fields, expression.start);
      case "variable": {
        const found = scope.lookup(expression.name);
        if (!found.found) {
          return this.problem({
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
        this.reading(expression);
        const root = this.root(expression.name);
        if (root.found) {
          return this.fields(root.value, expression.name, expression.fields, expression.start);
        }
        return this.call(expression, [], scope, undefined);
      }
    }
  }
}
