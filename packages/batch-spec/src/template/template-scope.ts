// The variable scopes of a template, shared by the evaluator (holding values) and the checker
// (holding shapes), so that both resolve `$name` and `range` declarations by the same rules.

/** One level of `$name` variables, with the `.` it was opened for; inner levels see outer ones. */
export class TemplateScope<T> {
  readonly variables = new Map<string, T>();
  readonly parent: TemplateScope<T> | undefined;
  readonly dot: T;

  constructor(dot: T, parent: TemplateScope<T> | undefined) {
    this.dot = dot;
    this.parent = parent;
  }

  lookup(name: string): { found: true; value: T } | { found: false } {
    for (
      let scope: TemplateScope<T> | undefined = this;
      scope !== undefined;
      scope = scope.parent
    ) {
      if (scope.variables.has(name)) return { found: true, value: scope.variables.get(name)! };
    }
    return { found: false };
  }

  /** `range $key, $element := ...` declares both; `range $element := ...` only the element. */
  declareRange(declarations: readonly string[], key: T, element: T): void {
    const [first, second] = declarations;
    if (second !== undefined) {
      this.variables.set(first!, key);
      this.variables.set(second, element);
    } else if (first !== undefined) {
      this.variables.set(first, element);
    }
  }
}
