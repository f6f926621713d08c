// The functions a template may call. This table is the whole vocabulary: a name not listed here
// is an error, and no function reaches outside the values it is given.
import { shellQuote } from "../coding-agent/shell-quote.ts";
import { matchesGlob } from "../glob.ts";
import {
  isPlainObject,
  isShellQuoted,
  isSpaceSeparated,
  isTruthy,
  kindOf,
  printValue,
  shellSplit,
  spaceSeparatedList,
  type TemplateValue,
} from "./template-values.ts";

/** The static shape of a value, used to check templates before anything runs. */
export type TemplateShape =
  | { kind: "string" }
  | { kind: "number" }
  | { kind: "boolean" }
  | { kind: "nil" }
  | { kind: "any" }
  | { kind: "list"; element: TemplateShape }
  | {
      kind: "object";
      fields: Readonly<Record<string, TemplateShape>>;
      /** Says what is wrong when a template reads a field this object does not have. */
      describeMissing?: (path: string, field: string) => string;
    };

export const stringShape: TemplateShape = { kind: "string" };
export const anyShape: TemplateShape = { kind: "any" };
export const booleanShape: TemplateShape = { kind: "boolean" };
export const numberShape: TemplateShape = { kind: "number" };
export const stringListShape: TemplateShape = { kind: "list", element: stringShape };

type ArgumentKind = "string" | "list" | "any";

export interface TemplateFunction {
  /** How a call looks, for messages: `join LIST SEPARATOR`. */
  usage: string;
  minimumArguments: number;
  /** Undefined for functions that take any number of arguments. */
  maximumArguments: number | undefined;
  /** What the leading arguments must be, where that can be checked before running. */
  argumentKinds: readonly ArgumentKind[];
  call(values: TemplateValue[]): TemplateValue;
  result(shapes: TemplateShape[]): TemplateShape;
}

export function acceptsArgumentCount(callable: TemplateFunction, count: number): boolean {
  return (
    count >= callable.minimumArguments &&
    (callable.maximumArguments === undefined || count <= callable.maximumArguments)
  );
}

/** Thrown by a function for bad arguments; the evaluator adds the function name and position. */
export class TemplateFunctionFailure extends Error {}

function fail(message: string): never {
  throw new TemplateFunctionFailure(message);
}

function requireString(value: TemplateValue, what: string): string {
  if (typeof value !== "string") fail(`${what} must be a string, got a ${kindOf(value)}`);
  return value;
}

function requireList(value: TemplateValue, what: string): readonly TemplateValue[] {
  if (!Array.isArray(value)) fail(`${what} must be a list, got a ${kindOf(value)}`);
  return value as readonly TemplateValue[];
}

function flattenStrings(values: readonly TemplateValue[]): string[] {
  const strings: string[] = [];
  for (const value of values) {
    if (Array.isArray(value)) strings.push(...flattenStrings(value));
    else strings.push(typeof value === "string" ? value : printValue(value));
  }
  return strings;
}

function comparable(left: TemplateValue, right: TemplateValue): void {
  if (left === null || right === null) return;
  if (typeof left === "object" || typeof right === "object") {
    fail(`cannot compare a ${kindOf(left)} with a ${kindOf(right)}; compare strings or numbers`);
  }
  if (typeof left !== typeof right) {
    fail(`cannot compare a ${kindOf(left)} with a ${kindOf(right)}`);
  }
}

function ordered(left: TemplateValue, right: TemplateValue): number {
  comparable(left, right);
  if (typeof left === "number" && typeof right === "number") return left - right;
  if (typeof left === "string" && typeof right === "string") {
    return left < right ? -1 : left > right ? 1 : 0;
  }
  return fail(`only strings and numbers can be ordered, got a ${kindOf(left)}`);
}

const encoder = new TextEncoder();

/** Go's `fmt.Sprint`: a space between operands when neither side is a string. */
function sprint(values: readonly TemplateValue[]): string {
  let output = "";
  values.forEach((value, index) => {
    const previous = values[index - 1];
    if (index > 0 && typeof value !== "string" && typeof previous !== "string") output += " ";
    output += printValue(value);
  });
  return output;
}

function sprintf(format: string, values: readonly TemplateValue[]): string {
  let next = 0;
  return format.replace(/%([%svdqtx])/g, (_match, verb: string) => {
    if (verb === "%") return "%";
    if (next >= values.length) return `%!${verb}(MISSING)`;
    const value = values[next++]!;
    switch (verb) {
      case "q":
        return JSON.stringify(typeof value === "string" ? value : printValue(value));
      case "d":
        return typeof value === "number" ? String(Math.trunc(value)) : `%!d(${printValue(value)})`;
      case "x":
        return typeof value === "number"
          ? Math.trunc(value).toString(16)
          : Buffer.from(printValue(value)).toString("hex");
      default:
        return printValue(value);
    }
  });
}

function index(collection: TemplateValue, keys: readonly TemplateValue[]): TemplateValue {
  let current = collection;
  for (const key of keys) {
    if (Array.isArray(current)) {
      if (typeof key !== "number" || !Number.isInteger(key)) {
        fail(`a list is indexed by a whole number, got a ${kindOf(key)}`);
      }
      const position = key as number;
      if (position < 0 || position >= current.length) {
        fail(`index ${position} is out of range for a list of ${current.length}`);
      }
      current = current[position] as TemplateValue;
    } else if (isPlainObject(current)) {
      const name = typeof key === "string" ? key : fail(`a map is indexed by a string key`);
      current = Object.hasOwn(current, name) ? (current[name] as TemplateValue) : null;
    } else if (typeof current === "string") {
      if (typeof key !== "number" || key < 0 || key >= current.length) {
        fail(`index ${printValue(key)} is out of range for a string of ${current.length}`);
      }
      current = current.charCodeAt(key as number);
    } else {
      fail(`cannot index a ${kindOf(current)}`);
    }
  }
  return current;
}

function slice(collection: TemplateValue, bounds: readonly TemplateValue[]): TemplateValue {
  if (typeof collection !== "string" && !Array.isArray(collection)) {
    fail(`only strings and lists can be sliced, got a ${kindOf(collection)}`);
  }
  const sliceable = collection as string | readonly TemplateValue[];
  const length = sliceable.length;
  const [from = 0, to = length] = bounds.map((bound) =>
    typeof bound === "number" && Number.isInteger(bound)
      ? bound
      : fail("slice bounds must be whole numbers"),
  );
  if (from < 0 || to > length || from > to) fail(`slice bounds ${from}:${to} are out of range`);
  if (typeof sliceable === "string") return sliceable.slice(from, to);
  // A slice of a Go slice has its type: part of search_result_paths still prints space separated.
  return isSpaceSeparated(sliceable)
    ? spaceSeparatedList(sliceable.slice(from, to))
    : sliceable.slice(from, to);
}

function shape(kind: "string" | "number" | "boolean"): () => TemplateShape {
  const fixed: TemplateShape = { kind };
  return () => fixed;
}

/** Every function a template may call, by name. `and` and `or` are evaluated lazily. */
export const templateFunctions: ReadonlyMap<string, TemplateFunction> = new Map<
  string,
  TemplateFunction
>([
  [
    "join",
    {
      usage: "join LIST SEPARATOR",
      minimumArguments: 2,
      maximumArguments: 2,
      argumentKinds: ["list", "string"],
      call: ([list, separator]) =>
        flattenStrings(requireList(list!, "join's first argument")).join(
          requireString(separator!, "join's separator"),
        ),
      result: shape("string"),
    },
  ],
  [
    "split",
    {
      usage: "split STRING SEPARATOR",
      minimumArguments: 2,
      maximumArguments: 2,
      argumentKinds: ["string", "string"],
      call: ([text, separator]) => {
        const input = requireString(text!, "split's first argument");
        const by = requireString(separator!, "split's separator");
        return by === "" ? Array.from(input) : input.split(by);
      },
      result: () => stringListShape,
    },
  ],
  [
    "replace",
    {
      usage: "replace STRING OLD NEW",
      minimumArguments: 3,
      maximumArguments: 3,
      argumentKinds: ["string", "string", "string"],
      call: ([text, old, replacement]) =>
        requireString(text!, "replace's first argument").replaceAll(
          requireString(old!, "replace's second argument"),
          requireString(replacement!, "replace's third argument"),
        ),
      result: shape("string"),
    },
  ],
  [
    "join_if",
    {
      usage: "join_if SEPARATOR VALUE...",
      minimumArguments: 1,
      maximumArguments: undefined,
      argumentKinds: ["string"],
      call: ([separator, ...values]) =>
        flattenStrings(values)
          .filter((value) => value !== "")
          .join(requireString(separator!, "join_if's separator")),
      result: shape("string"),
    },
  ],
  [
    "matches",
    {
      usage: "matches STRING GLOB",
      minimumArguments: 2,
      maximumArguments: 2,
      argumentKinds: ["string", "string"],
      call: ([text, pattern]) =>
        matchesGlob(
          requireString(pattern!, "matches' pattern"),
          requireString(text!, "matches' first argument"),
        ),
      result: shape("boolean"),
    },
  ],
  [
    "eq",
    {
      usage: "eq VALUE OTHER...",
      minimumArguments: 2,
      maximumArguments: undefined,
      argumentKinds: [],
      call: ([first, ...others]) =>
        others.some((other) => {
          comparable(first!, other);
          return first === other;
        }),
      result: shape("boolean"),
    },
  ],
  [
    "ne",
    {
      usage: "ne VALUE OTHER",
      minimumArguments: 2,
      maximumArguments: 2,
      argumentKinds: [],
      call: ([left, right]) => {
        comparable(left!, right!);
        return left !== right;
      },
      result: shape("boolean"),
    },
  ],
  [
    "lt",
    {
      usage: "lt VALUE OTHER",
      minimumArguments: 2,
      maximumArguments: 2,
      argumentKinds: [],
      call: ([left, right]) => ordered(left!, right!) < 0,
      result: shape("boolean"),
    },
  ],
  [
    "le",
    {
      usage: "le VALUE OTHER",
      minimumArguments: 2,
      maximumArguments: 2,
      argumentKinds: [],
      call: ([left, right]) => ordered(left!, right!) <= 0,
      result: shape("boolean"),
    },
  ],
  [
    "gt",
    {
      usage: "gt VALUE OTHER",
      minimumArguments: 2,
      maximumArguments: 2,
      argumentKinds: [],
      call: ([left, right]) => ordered(left!, right!) > 0,
      result: shape("boolean"),
    },
  ],
  [
    "ge",
    {
      usage: "ge VALUE OTHER",
      minimumArguments: 2,
      maximumArguments: 2,
      argumentKinds: [],
      call: ([left, right]) => ordered(left!, right!) >= 0,
      result: shape("boolean"),
    },
  ],
  [
    "and",
    {
      usage: "and VALUE...",
      minimumArguments: 1,
      maximumArguments: undefined,
      argumentKinds: [],
      call: (values) => values.find((value) => !isTruthy(value)) ?? values[values.length - 1]!,
      result: () => anyShape,
    },
  ],
  [
    "or",
    {
      usage: "or VALUE...",
      minimumArguments: 1,
      maximumArguments: undefined,
      argumentKinds: [],
      call: (values) => values.find((value) => isTruthy(value)) ?? values[values.length - 1]!,
      result: () => anyShape,
    },
  ],
  [
    "not",
    {
      usage: "not VALUE",
      minimumArguments: 1,
      maximumArguments: 1,
      argumentKinds: [],
      call: ([value]) => !isTruthy(value!),
      result: shape("boolean"),
    },
  ],
  [
    "len",
    {
      usage: "len VALUE",
      minimumArguments: 1,
      maximumArguments: 1,
      argumentKinds: [],
      call: ([value]) => {
        if (typeof value === "string") return encoder.encode(value).length;
        if (Array.isArray(value)) return value.length;
        if (isPlainObject(value)) return Object.keys(value).length;
        return fail(`len needs a string, list or map, got a ${kindOf(value)}`);
      },
      result: shape("number"),
    },
  ],
  [
    "index",
    {
      usage: "index COLLECTION KEY...",
      minimumArguments: 1,
      maximumArguments: undefined,
      argumentKinds: [],
      call: ([collection, ...keys]) => index(collection!, keys),
      result: ([collection, ...keys]) =>
        collection?.kind === "list" && keys.length === 1 ? collection.element : anyShape,
    },
  ],
  [
    "slice",
    {
      usage: "slice COLLECTION [FROM [TO]]",
      minimumArguments: 1,
      maximumArguments: 3,
      argumentKinds: [],
      call: ([collection, ...bounds]) => slice(collection!, bounds),
      result: ([collection]) => collection ?? anyShape,
    },
  ],
  [
    "print",
    {
      usage: "print VALUE...",
      minimumArguments: 0,
      maximumArguments: undefined,
      argumentKinds: [],
      call: (values) => sprint(values),
      result: shape("string"),
    },
  ],
  [
    "println",
    {
      usage: "println VALUE...",
      minimumArguments: 0,
      maximumArguments: undefined,
      argumentKinds: [],
      call: (values) => `${values.map(printValue).join(" ")}\n`,
      result: shape("string"),
    },
  ],
  [
    "printf",
    {
      usage: "printf FORMAT VALUE...",
      minimumArguments: 1,
      maximumArguments: undefined,
      argumentKinds: ["string"],
      call: ([format, ...values]) => sprintf(requireString(format!, "printf's format"), values),
      result: shape("string"),
    },
  ],
  [
    "shellquote_join",
    {
      usage: "shellquote_join VALUE...",
      minimumArguments: 0,
      maximumArguments: undefined,
      argumentKinds: [],
      call: (values) =>
        flattenStrings(values)
          .map((word) => (isShellQuoted(word) ? word : shellQuote(word)))
          .join(" "),
      result: shape("string"),
    },
  ],
  [
    "shellquote_split",
    {
      usage: "shellquote_split STRING",
      minimumArguments: 1,
      maximumArguments: 1,
      argumentKinds: ["string"],
      call: ([text]) =>
        shellSplit(requireString(text!, "shellquote_split's argument")) ??
        fail("shellquote_split: the string has an unterminated quote"),
      result: () => stringListShape,
    },
  ],
]);

/** Names of every template function, sorted, for messages. */
export const templateFunctionNames: readonly string[] = [...templateFunctions.keys()].sort();
