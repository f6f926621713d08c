// biome-ignore-all lint/suspicious/noTemplateCurlyInString: batch spec templates use ${{ }}, and they are what these tests are about
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { BatchSpecError } from "../batch-spec-error.ts";
import {
  batchChangeLinkPlaceholder,
  createChangesetTemplateContext,
  createStepTemplateContext,
} from "./template-context.ts";
import { renderTemplate, type TemplateContext } from "./template-evaluate.ts";

const context = createStepTemplateContext({
  repository: { name: "github.com/acme/api", branch: "main", fileMatches: ["b.go", "a.go"] },
  batchChange: { name: "upgrade", description: "Upgrade things" },
  outputs: { version: "1.2.3", modules: { main: "api", list: ["x", "y"] } },
  previousStep: {
    changedFiles: { modified: ["go.mod", "it's here.go"], added: ["new.go"] },
    stdout: "success\n",
  },
  steps: { changedFiles: { modified: ["go.mod"] }, path: "services/api" },
});

function render(template: string, with_: TemplateContext = context): string {
  return renderTemplate(template, with_);
}

function failure(template: string, with_: TemplateContext = context): BatchSpecError {
  try {
    render(template, with_);
  } catch (error) {
    if (error instanceof BatchSpecError) return error;
    throw error;
  }
  throw new Error(`expected ${template} to fail`);
}

describe("renderTemplate: the Sourcegraph template language", () => {
  it("substitutes variables and leaves text outside ${{ }} alone", () => {
    expect(render("repo ${{ repository.name }} on ${{repository.branch}} {{ x }} }}")).toBe(
      "repo github.com/acme/api on main {{ x }} }}",
    );
  });

  it("joins search result paths, sorted, with Go call syntax", () => {
    expect(render('${{ join repository.search_result_paths " " }}')).toBe("a.go b.go");
    expect(render('${{ join repository.search_result_paths "\\n" }}')).toBe("a.go\nb.go");
  });

  it("prints search result paths space separated, as src-cli's fileMatchPathList.String does", () => {
    // Real specs loop over them in shell: `for f in ${{ repository.search_result_paths }}`.
    expect(render("for f in ${{ repository.search_result_paths }}; do")).toBe(
      "for f in a.go b.go; do",
    );
    expect(
      render('${{ printf "%v|%s" repository.search_result_paths repository.search_result_paths }}'),
    ).toBe("a.go b.go|a.go b.go");
    expect(render("${{ repository }}")).toBe(
      "map[branch:main name:github.com/acme/api search_result_paths:a.go b.go]",
    );
    expect(
      render(
        "${{ len repository.search_result_paths }} ${{ index repository.search_result_paths 1 }}",
      ),
    ).toBe("2 b.go");
    // A slice of a Go slice keeps its type, and so its String method.
    expect(render("${{ slice repository.search_result_paths 1 }}")).toBe("b.go");
    expect(render("${{ slice previous_step.modified_files 1 }}")).toBe(`['it'\\''s here.go']`);
    // Every other list prints as Go prints a []string or []any, with brackets, as in src-cli.
    expect(
      render(
        "${{ previous_step.added_files }} ${{ steps.modified_files }} ${{ steps.renamed_files }} ${{ step.deleted_files }}",
      ),
    ).toBe("[new.go] [go.mod] [] []");
  });

  it("shell-quotes file names from git so they cannot inject commands", () => {
    expect(render('${{ join previous_step.modified_files " " }}')).toBe(
      `go.mod 'it'\\''s here.go'`,
    );
  });

  it("implements split, replace, join_if and matches", () => {
    expect(render('${{ index (split "a,b,c" ",") 1 }}')).toBe("b");
    expect(render('${{ replace repository.name "github.com/" "" }}')).toBe("acme/api");
    expect(render('${{ join_if "-" "a" "" "b" }}')).toBe("a-b");
    expect(render('${{ matches repository.name "github.com/acme/*" }}')).toBe("true");
    expect(render('${{ matches repository.name "gitlab.com/*" }}')).toBe("false");
  });

  it("compares with eq and ne, and indexes lists and maps", () => {
    expect(render('${{ eq previous_step.stdout "success\\n" }}')).toBe("true");
    expect(render('${{ eq repository.branch "dev" "main" }}')).toBe("true");
    expect(render('${{ ne repository.branch "main" }}')).toBe("false");
    expect(render("${{ index outputs.modules.list 1 }}")).toBe("y");
    expect(render('${{ index outputs.modules "main" }}')).toBe("api");
    expect(render('${{ index outputs.modules "absent" }}')).toBe("<no value>");
  });

  it("supports if/else if/else, range, with, variables, pipelines and trim markers", () => {
    expect(
      render(
        '${{ if eq repository.branch "dev" }}dev${{ else if eq repository.branch "main" }}main${{ else }}other${{ end }}',
      ),
    ).toBe("main");
    expect(
      render(
        "${{ range $i, $f := repository.search_result_paths }}[${{ $i }}:${{ $f }}]${{ end }}",
      ),
    ).toBe("[0:a.go][1:b.go]");
    expect(render("${{ range steps.deleted_files }}x${{ else }}none${{ end }}")).toBe("none");
    expect(render("${{ range repository.search_result_paths }}<${{ . }}>${{ end }}")).toBe(
      "<a.go><b.go>",
    );
    expect(render("${{ with outputs.modules }}${{ .main }}${{ end }}")).toBe("api");
    expect(render('${{ $n := "x" }}${{ $n }}')).toBe("x");
    expect(render('${{ repository.name | printf "<%s>" }}')).toBe("<github.com/acme/api>");
    expect(render("a  ${{- repository.branch -}}  b")).toBe("amainb");
    expect(render("${{/* a comment */}}x")).toBe("x");
  });

  it("prints lists and maps the way Go does", () => {
    expect(
      render("${{ outputs.modules.list }} ${{ outputs.modules }} ${{ len outputs.modules.list }}"),
    ).toBe("[x y] map[list:[x y] main:api] 2");
  });

  it("evaluates and/or lazily, like Go", () => {
    expect(render("${{ and false (index outputs.modules.list 9) }}")).toBe("false");
    expect(render('${{ or "" "fallback" }}')).toBe("fallback");
  });

  it("offers shellquote_join and shellquote_split", () => {
    expect(render(`\${{ shellquote_join "a b" "c" }}`)).toBe(`'a b' c`);
    expect(render(`\${{ shellquote_join (shellquote_split "'a b' c") }}`)).toBe(`'a b' c`);
    expect(render(`\${{ shellquote_join previous_step.modified_files }}`)).toBe(
      `go.mod 'it'\\''s here.go'`,
    );
  });

  it("shellquote_join quotes a word that would read as an assignment, and no other =", () => {
    expect(render(`\${{ shellquote_join "A=b" "--flag=x" "key.name=y" }}`)).toBe(
      `'A=b' --flag=x key.name=y`,
    );
  });

  it("shellquote_join refuses a NUL character instead of writing it into a script", () => {
    const withNul = createStepTemplateContext({
      repository: { name: "r" },
      batchChange: { name: "b" },
      outputs: { binary: "a\u0000b" },
    });
    const error = failure("${{ shellquote_join outputs.binary }}", withNul);
    expect(error.code).toBe("shell_nul_character");
    expect(error.message).toMatch(/^shellquote_join: .*NUL character/);
  });

  it("leaves batch_change_link in place in changeset templates", () => {
    const changeset = createChangesetTemplateContext({
      repository: { name: "r" },
      batchChange: { name: "b" },
    });
    expect(
      renderTemplate("See ${{ batch_change_link }} for ${{ repository.name }}", changeset),
    ).toBe(`See ${batchChangeLinkPlaceholder} for r`);
  });
});

describe("renderTemplate: errors name the problem and where it is", () => {
  it("names an unknown variable and its offset", () => {
    const error = failure("echo ${{ repository.nmae }}");
    expect(error.code).toBe("template_unknown_variable");
    expect(error.message).toBe(
      'unknown variable "repository.nmae"; did you mean "repository.name"?',
    );
    expect(error.offset).toBe(9);
  });

  it("names an unknown function and its offset", () => {
    const error = failure('x ${{ jion repository.search_result_paths "," }}');
    expect(error.code).toBe("template_unknown_function");
    expect(error.message).toBe('unknown function "jion"; did you mean "join"?');
    expect(error.offset).toBe(6);
  });

  it("reports a missing output key as an unknown variable", () => {
    expect(failure("${{ outputs.nope }}").message).toBe('unknown variable "outputs.nope"');
  });

  it("reports wrong argument counts with the usage", () => {
    expect(failure('${{ join "a" }}').message).toBe(
      "join takes 2 arguments (join LIST SEPARATOR), got 1",
    );
  });

  it("reports syntax errors with their offset", () => {
    const error = failure("a ${{ if true }}b");
    expect(error.code).toBe("template_syntax");
    expect(error.message).toBe('"if" is never closed: add "${{ end }}"');
    expect(error.offset).toBe(2);
  });
});

describe("renderTemplate: no way out of the context", () => {
  it("does not expose inherited members such as constructor or __proto__", () => {
    for (const template of [
      "${{ repository.constructor }}",
      "${{ repository.__proto__ }}",
      "${{ outputs.toString }}",
      "${{ repository.name.length }}",
      "${{ constructor }}",
    ]) {
      const error = failure(template);
      expect(error).toBeInstanceOf(BatchSpecError);
    }
  });

  it("never calls functions found in the context", () => {
    let called = false;
    const hostile = {
      repository: {
        name: (() => {
          called = true;
          return "x";
        }) as unknown as string,
      },
    } as TemplateContext;
    expect(() => renderTemplate("${{ repository.name }}", hostile)).toThrow(BatchSpecError);
    expect(called).toBe(false);
  });

  it("does not read fields of class instances", () => {
    const hostile = { when: new Date(0) as unknown as string } as TemplateContext;
    expect(() => renderTemplate("${{ when.getTime }}", hostile)).toThrow(BatchSpecError);
  });

  it("fails every malformed or hostile input with a BatchSpecError, never anything else", () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.oneof(
            fc.constantFrom(
              "${{",
              "}}",
              " ",
              "(",
              ")",
              "|",
              "$x",
              ":=",
              ".",
              "if",
              "end",
              "range",
              "else",
              '"',
              "`",
            ),
            fc.constantFrom(
              "repository",
              ".name",
              "join",
              "outputs",
              "constructor",
              "__proto__",
              "1",
              "-",
            ),
            fc.string({ maxLength: 4 }),
          ),
          { maxLength: 12 },
        ),
        (parts) => {
          try {
            render(parts.join(""));
          } catch (error) {
            if (!(error instanceof BatchSpecError)) throw error;
          }
        },
      ),
    );
  });

  it("stops a template that would run for minutes", () => {
    const error = failure("${{ range 100000 }}${{ range 100000 }}${{ end }}${{ end }}");
    expect(error.message).toBe("the template does too much work (nested ranges?); simplify it");
  });

  it("renders text without actions unchanged", () => {
    fc.assert(
      fc.property(fc.string(), (text) => {
        fc.pre(!text.includes("${{"));
        expect(render(text)).toBe(text);
      }),
    );
  });
});
