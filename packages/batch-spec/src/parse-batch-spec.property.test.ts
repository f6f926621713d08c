// biome-ignore-all lint/suspicious/noTemplateCurlyInString: batch spec templates use ${{ }}, and they are what these tests are about
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseDocument, stringify } from "yaml";
import { goYamlCompatibleText, parseGoYamlCompatible } from "./go-yaml-compat.ts";
import { parseBatchSpec } from "./parse-batch-spec.ts";

const name = fc.stringMatching(/^[\w.-]{1,12}$/);
const text = fc.string({ maxLength: 20 }).filter((value) => !value.includes("${{"));

const step = fc.record(
  {
    run: text,
    // An image reference never starts with "-" (it would read as a runtime option; refused).
    image: fc.stringMatching(/^[a-z0-9:/.][a-z0-9:/.-]{0,11}$/),
    env: fc.dictionary(fc.stringMatching(/^[A-Z_]{1,6}$/), text, { maxKeys: 3 }),
    if: fc.boolean(),
  },
  { requiredKeys: ["run", "image"] },
);

const spec = fc.record(
  {
    version: fc.constant(3 as const),
    name,
    description: text,
    on: fc.array(fc.record({ repository: name, branch: name }, { requiredKeys: ["repository"] }), {
      maxLength: 3,
    }),
    steps: fc.array(step, { minLength: 1, maxLength: 4 }),
    changesetTemplate: fc.record({
      title: text,
      branch: name,
      commit: fc.record({ message: text }),
      published: fc.oneof(fc.boolean(), fc.constant("draft" as const), fc.constant(null)),
    }),
  },
  { requiredKeys: ["version", "name", "steps", "changesetTemplate"] },
);

describe("parseBatchSpec properties", () => {
  it("never throws, whatever the input", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          fc.json(),
          fc.anything().map((value) => stringify(value) ?? ""),
        ),
        (input) => {
          const result = parseBatchSpec(input, { file: "fuzz.yaml" });
          expect(result.spec === undefined).toBe(result.diagnostics.length > 0);
          for (const diagnostic of result.diagnostics) {
            expect(diagnostic.line).toBeGreaterThanOrEqual(0);
            expect(diagnostic.message.length).toBeGreaterThan(0);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it("parses generated specs identically from YAML and from JSON, with image folded into container", () => {
    fc.assert(
      fc.property(spec, (value) => {
        const fromYaml = parseBatchSpec(stringify(value), { file: "spec.yaml" });
        const fromJson = parseBatchSpec(JSON.stringify(value, null, 2), { file: "spec.json" });
        expect(fromYaml.diagnostics).toEqual([]);
        expect(fromJson.spec).toEqual(fromYaml.spec);
        expect(fromYaml.spec?.steps?.map((parsed) => parsed.container)).toEqual(
          value.steps.map((input) => input.image),
        );
      }),
      { numRuns: 100 },
    );
  });

  it("gives the same parsed spec for image and container spellings", () => {
    fc.assert(
      fc.property(spec, (value) => {
        const respelled = {
          ...value,
          steps: value.steps.map(({ image, ...rest }) => ({ container: image, ...rest })),
        };
        const original = parseBatchSpec(stringify(value), { file: "spec.yaml" });
        const other = parseBatchSpec(stringify(respelled), { file: "spec.yaml" });
        expect(JSON.stringify(other.spec)).toBe(JSON.stringify(original.spec));
      }),
      { numRuns: 100 },
    );
  });

  it("reports an unknown field at the line of its key, wherever it is inserted", () => {
    fc.assert(
      fc.property(spec, fc.nat(), (value, pick) => {
        const index = pick % value.steps.length;
        const steps = value.steps.map((entry, position) =>
          position === index ? { ...entry, contaner: "x" } : entry,
        );
        const yaml = stringify({ ...value, steps });
        const lines = yaml.split("\n");
        const result = parseBatchSpec(yaml, { file: "spec.yaml" });
        const unknown = result.diagnostics.filter(
          (diagnostic) => diagnostic.code === "unknown_field",
        );
        expect(unknown).toHaveLength(1);
        expect(unknown[0]!.path).toBe(`steps[${index}].contaner`);
        expect(lines[unknown[0]!.line - 1]!.slice(unknown[0]!.column - 1)).toMatch(/^contaner: x/);
      }),
      { numRuns: 100 },
    );
  });

  // yaml.v3 ignores the indentation of a quoted scalar's continuation lines; the `yaml` package
  // needs them indented past the key. Whatever the indentation, the spec must read the same.
  const quotedLines = fc.array(fc.stringMatching(/^[a-z0-9 ,:#!]{0,10}$/), {
    minLength: 2,
    maxLength: 5,
  });
  const indentations = fc.array(fc.integer({ min: 0, max: 6 }), { minLength: 5, maxLength: 5 });

  function quotedSpec(
    lines: readonly string[],
    indentation: (index: number) => number,
    quote: string,
    extra = "",
  ): string {
    const scalar = (first: string) =>
      quote +
      lines
        .map((line, index) => (index === 0 ? first + line : " ".repeat(indentation(index)) + line))
        .join("\n") +
      quote;
    return `name: x\ndescription: ${scalar("a")}\nsteps:\n  - run: ${scalar("echo ")}\n    container: alpine\n${extra}changesetTemplate:\n  title: t\n  branch: b\n  commit:\n    message: m\n`;
  }

  it("reads a quoted scalar the same whatever the indentation of its continuation lines, with exact positions after it", () => {
    fc.assert(
      fc.property(quotedLines, indentations, fc.constantFrom('"', "'"), (lines, indents, quote) => {
        const indented = parseBatchSpec(
          quotedSpec(lines, () => 6, quote),
          { file: "spec.yaml" },
        );
        const text = quotedSpec(lines, (index) => indents[index]!, quote, "nmae: y\n");
        const result = parseBatchSpec(text, { file: "spec.yaml" });
        const compatible = parseBatchSpec(
          quotedSpec(lines, (index) => indents[index]!, quote),
          {
            file: "spec.yaml",
          },
        );
        expect(indented.diagnostics).toEqual([]);
        expect(compatible.diagnostics).toEqual([]);
        expect(compatible.spec).toEqual(indented.spec);
        expect(result.diagnostics).toHaveLength(1);
        const [diagnostic] = result.diagnostics;
        expect(diagnostic!.code).toBe("unknown_field");
        const line = text.split("\n")[diagnostic!.line - 1]!;
        expect(line.slice(diagnostic!.column - 1)).toBe("nmae: y");
      }),
      { numRuns: 200 },
    );
  });

  it("reads a flow list the same whatever the indentation of its later lines", () => {
    fc.assert(
      fc.property(
        fc.array(name, { minLength: 1, maxLength: 5 }),
        indentations,
        (names, indents) => {
          const list = (indentation: (index: number) => number) =>
            `name: x\non: [${names
              .map(
                (repository, index) =>
                  (index === 0 ? "" : " ".repeat(indentation(index))) +
                  `{repository: "${repository}"}`,
              )
              .join(",\n")}\n${" ".repeat(indentation(0))}]\n`;
          const indented = parseBatchSpec(
            list(() => 6),
            { file: "spec.yaml" },
          );
          const result = parseBatchSpec(
            list((index) => indents[index]!),
            { file: "spec.yaml" },
          );
          expect(indented.diagnostics).toEqual([]);
          expect(result.diagnostics).toEqual([]);
          expect(result.spec).toEqual(indented.spec);
        },
      ),
      { numRuns: 200 },
    );
  });

  const yamlish = fc
    .array(
      fc.constantFrom(
        "a",
        " ",
        "\n",
        "\t",
        '"',
        "'",
        "\\",
        ":",
        "-",
        "#",
        "[",
        "]",
        "{",
        "}",
        ",",
        "k: ",
      ),
      {
        maxLength: 60,
      },
    )
    .map((pieces) => pieces.join(""));

  it("only inserts spaces, and maps every character of the adjusted text back to itself", () => {
    fc.assert(
      fc.property(yamlish, (original) => {
        const { text, originalOffset } = goYamlCompatibleText(original);
        const images = new Set<number>();
        let previous = 0;
        for (let offset = 0; offset < text.length; offset += 1) {
          const mapped = originalOffset(offset);
          expect(mapped).toBeGreaterThanOrEqual(previous);
          previous = mapped;
          if (original[mapped] === text[offset]) images.add(mapped);
          else expect(text[offset]).toBe(" ");
        }
        expect(images.size).toBe(original.length);
      }),
      { numRuns: 500 },
    );
  });

  it("needs no repair for a text the yaml package reads without an error, so such a text is parsed as written", () => {
    const options = { prettyErrors: false, uniqueKeys: true, merge: true } as const;
    const indented = fc
      .array(
        fc.constantFrom("a", "  ", "\n", "\n  ", "- ", "k: ", '"', "'", "[", "]", "{", "}", ","),
        {
          maxLength: 40,
        },
      )
      .map((pieces) => pieces.join(""));
    fc.assert(
      fc.property(fc.oneof(yamlish, indented), (original) => {
        if (parseDocument(original, options).errors.length > 0) return;
        expect(goYamlCompatibleText(original).text).toBe(original);
        const parsed = parseGoYamlCompatible(original, (text) => parseDocument(text, options));
        expect(parsed.text).toBe(original);
      }),
      { numRuns: 2000 },
    );
  });
});
