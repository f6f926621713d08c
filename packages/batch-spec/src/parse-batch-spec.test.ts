// biome-ignore-all lint/suspicious/noTemplateCurlyInString: batch spec templates use ${{ }}, and they are what these tests are about
import { describe, expect, it, vi } from "vitest";
import { Lexer } from "yaml";
import { formatDiagnostic } from "./diagnostics.ts";
import { parseBatchSpec } from "./parse-batch-spec.ts";

/** Diagnostics as `line:column path: message`, the way a person reads them. */
function problems(text: string, file = "spec.yaml"): string[] {
  return parseBatchSpec(text, { file }).diagnostics.map((diagnostic) =>
    formatDiagnostic(diagnostic).slice(file.length + 1),
  );
}

const template = `changesetTemplate:
  title: t
  branch: b
  commit:
    message: m
`;

describe("parseBatchSpec: reading YAML and JSON", () => {
  it("returns the canonical spec and no diagnostics for a valid version 1 spec", () => {
    const result = parseBatchSpec(
      `name: hello
on:
  - repositoriesMatchingQuery: file:README.md
steps:
  - run: echo hi >> README.md
    container: alpine:3
${template}`,
      { file: "spec.yaml" },
    );
    expect(result.diagnostics).toEqual([]);
    expect(result.spec).toEqual({
      version: 1,
      name: "hello",
      on: [{ repositoriesMatchingQuery: "file:README.md" }],
      steps: [{ run: "echo hi >> README.md", container: "alpine:3" }],
      changesetTemplate: { title: "t", branch: "b", commit: { message: "m" } },
    });
  });

  it("reads JSON with positions, chosen by the .json extension", () => {
    const json = JSON.stringify({ name: "x", version: 3, stepz: [] }, null, 2);
    expect(problems(json, "spec.json")).toEqual([
      '4:3: stepz: unknown field "stepz"; did you mean "steps"?',
    ]);
  });

  it("reports a JSON syntax error with its position", () => {
    expect(problems('{\n  "name": "x",\n}', "spec.json")).toEqual([
      "3:1: invalid JSON: Expected double-quoted property name; fix the syntax here",
    ]);
  });

  it("reports a YAML syntax error with its position", () => {
    expect(problems("name: x\nsteps: [\n  - run: a\n")).toEqual([
      "3:3: invalid YAML: Block collections are not allowed within flow collections",
      "4:1: invalid YAML: Flow sequence in block collection must be sufficiently indented and end with a ]",
    ]);
  });

  it("reports a duplicate key at the second occurrence and names the first", () => {
    expect(problems("name: x\ndescription: a\nname: y\n")).toEqual([
      '3:1: duplicate key "name" (first at line 1, column 1); a key may appear once in a map, so merge or remove one',
    ]);
  });

  it("reports duplicate keys in JSON too", () => {
    expect(problems('{"name": "a", "name": "b"}', "spec.json")).toEqual([
      '1:15: duplicate key "name" (first at line 1, column 2); a key may appear once in a map, so merge or remove one',
    ]);
  });

  it("expands anchors and merge keys, as src-cli's YAML reader does", () => {
    const result = parseBatchSpec(
      `version: 3
name: x
steps:
  - &base
    run: echo a
    image: alpine
  - <<: *base
    run: echo b
${template}`,
      { file: "spec.yaml" },
    );
    expect(result.diagnostics).toEqual([]);
    expect(result.spec?.steps).toEqual([
      { run: "echo a", container: "alpine" },
      { run: "echo b", container: "alpine" },
    ]);
  });

  it("reports an alias to an anchor that does not exist", () => {
    expect(problems("name: *nowhere\n")).toEqual([
      '1:7: invalid YAML: alias "*nowhere" refers to no anchor before it; define "&nowhere" earlier in the file',
    ]);
  });

  it("rejects an empty document and a document that is not a map", () => {
    expect(problems("")).toEqual([
      "1:1: the spec is empty; a batch spec is a map with at least a name",
    ]);
    expect(problems("- a\n- b\n")).toEqual([
      "1:1: a batch spec is a map of fields (name, on, steps, changesetTemplate, ...)",
    ]);
  });
});

describe("parseBatchSpec: structure", () => {
  it("rejects unknown fields with a did-you-mean suggestion", () => {
    expect(
      problems(`name: x
steps:
  - run: echo
    contaner: alpine
    Env: {}
${template}`),
    ).toEqual([
      '3:5: steps[0]: missing "container": a step runs in a container image; add container: <image>',
      '4:5: steps[0].contaner: unknown field "contaner"; did you mean "container"?',
      '5:5: steps[0].Env: unknown field "Env"; did you mean "env"?',
    ]);
  });

  it("lists the allowed fields when no field is close", () => {
    expect(problems("name: x\nzzz: 1\n")).toEqual([
      '2:1: zzz: unknown field "zzz"; remove it (allowed here: $schema, version, name, description, on, workspaces, steps, transformChanges, importChangesets, changesetTemplate, changesetHooks, rollout)',
    ]);
  });

  it("requires a name", () => {
    expect(problems("description: x\n")).toEqual([
      '1:1: name: missing required field "name"; add it',
    ]);
  });

  it("rejects a name with spaces, saying which characters are allowed", () => {
    expect(problems("name: hello world\n")).toEqual([
      '1:7: name: the batch change name may contain only letters, digits, "_", "." and "-" (no spaces or newlines); got "hello world"',
    ]);
  });

  it("rejects versions other than 1, 2 and 3", () => {
    expect(problems("version: 4\nname: x\n")).toEqual(["1:10: version: must be 1, 2 or 3; got 4"]);
  });

  it("names the expected type and suggests quotes for a number where text belongs", () => {
    expect(problems("name: x\ndescription: 12\n")).toEqual([
      '2:14: description: expected a string, got a whole number; put it in quotes ("12") to use it as text',
    ]);
  });

  it("reports a missing field of a nested object at the object", () => {
    expect(problems("name: x\nchangesetTemplate:\n  title: t\n  branch: b\n")).toEqual([
      '2:1: changesetTemplate.commit: missing required field "commit"; add it',
    ]);
  });

  it("rejects an empty transformChanges directory", () => {
    expect(
      problems(`name: x
transformChanges:
  group:
    - directory: ""
      branch: batch/api
`),
    ).toEqual(["4:18: transformChanges.group[0].directory: must not be empty"]);
  });

  it("rejects a bad output format with the allowed formats", () => {
    expect(
      problems(`name: x
steps:
  - run: echo
    container: alpine
    outputs:
      result:
        value: x
        format: xml
${template}`),
    ).toEqual([
      '8:17: steps[0].outputs.result.format: must be "json", "yaml" or "text"; got "xml"',
    ]);
  });
});

describe("parseBatchSpec: versions and step kinds", () => {
  it("refuses an image reference that starts with -, where it is written", () => {
    // `--privileged` reached `podman image inspect` as an option.
    expect(
      problems(`version: 3
name: x
steps:
  - run: echo
    image: --privileged
  - run: echo
    image: "-v/:/host"
${template}`),
    ).toEqual([
      '5:12: steps[0].image: image reference "--privileged" starts with "-", so the container runtime would read it as an option; no image name starts with "-": name an image such as alpine:3',
      '7:12: steps[1].image: image reference "-v/:/host" starts with "-", so the container runtime would read it as an option; no image name starts with "-": name an image such as alpine:3',
    ]);
    expect(
      problems(`name: x
steps:
  - run: echo
    container: -it
${template}`),
    ).toEqual([
      '4:16: steps[0].container: image reference "-it" starts with "-", so the container runtime would read it as an option; no image name starts with "-": name an image such as alpine:3',
    ]);
  });

  it("accepts a version 3 step with run and image, canonicalised to container", () => {
    const result = parseBatchSpec(
      `version: 3
name: x
steps:
  - run: echo
    image: alpine:3
${template}`,
      { file: "spec.yaml" },
    );
    expect(result.diagnostics).toEqual([]);
    expect(result.spec?.steps).toEqual([{ run: "echo", container: "alpine:3" }]);
  });

  it("gives identical results for image and container in version 3", () => {
    const withImage = parseBatchSpec(
      `version: 3\nname: x\nsteps:\n  - run: a\n    image: i\n${template}`,
      {
        file: "a.yaml",
      },
    );
    const withContainer = parseBatchSpec(
      `version: 3\nname: x\nsteps:\n  - container: i\n    run: a\n${template}`,
      { file: "a.yaml" },
    );
    expect(JSON.stringify(withImage.spec)).toBe(JSON.stringify(withContainer.spec));
  });

  it("accepts a version 3 codingAgent step with an image", () => {
    const result = parseBatchSpec(
      `version: 3
name: x
steps:
  - codingAgent:
      type: codex
      prompt: Update \${{ repository.name }}
    image: node:22
${template}`,
      { file: "spec.yaml" },
    );
    expect(result.diagnostics).toEqual([]);
    expect(result.spec?.steps).toEqual([
      {
        container: "node:22",
        codingAgent: { type: "codex", prompt: "Update ${{ repository.name }}" },
      },
    ]);
  });

  it("requires run or codingAgent in a version 3 step", () => {
    expect(problems(`version: 3\nname: x\nsteps:\n  - image: alpine\n${template}`)).toEqual([
      '4:5: steps[0]: a step needs "run" (a shell command) or "codingAgent" (an agent and a prompt); add one of them',
    ]);
  });

  it("requires an image for a version 3 run step", () => {
    expect(problems(`version: 3\nname: x\nsteps:\n  - run: echo\n${template}`)).toEqual([
      '4:5: steps[0]: missing "image": a step runs in a container image; add image: <image>',
    ]);
  });

  it("requires an image for a codingAgent step", () => {
    expect(
      problems(`version: 3
name: x
steps:
  - codingAgent: {type: codex, prompt: hi}
${template}`),
    ).toEqual([
      '4:5: steps[0]: missing "image": a codingAgent step runs the agent in a container image that has the tools it needs (curl, tar); add image: <image>',
    ]);
  });

  it("rejects codingAgent together with run", () => {
    expect(
      problems(`version: 3
name: x
steps:
  - run: echo
    codingAgent: {type: codex, prompt: hi}
    image: node
${template}`),
    ).toEqual([
      '5:5: steps[0].codingAgent: a step has either "run" or "codingAgent", not both; move the shell command into a step of its own',
    ]);
  });

  it("rejects codingAgent in version 1 and 2 specs, pointing to version 3", () => {
    for (const version of [1, 2]) {
      expect(
        problems(`version: ${version}
name: x
steps:
  - codingAgent: {type: codex, prompt: hi}
    container: node
${template}`),
      ).toEqual([
        '4:5: steps[0].codingAgent: codingAgent steps need version 3; add "version: 3" at the top of the spec and give the step an "image"',
      ]);
    }
  });

  it("treats a spec without a version as version 1", () => {
    expect(
      problems(
        `name: x\nsteps:\n  - codingAgent: {type: codex, prompt: hi}\n    container: n\n${template}`,
      ),
    ).toEqual([
      '3:5: steps[0].codingAgent: codingAgent steps need version 3; add "version: 3" at the top of the spec and give the step an "image"',
    ]);
  });

  it("requires run and container in version 1 and 2 steps", () => {
    expect(problems(`version: 2\nname: x\nsteps:\n  - env: {A: b}\n${template}`)).toEqual([
      '4:5: steps[0]: missing "container": a step runs in a container image; add container: <image>',
      '4:5: steps[0]: missing "run": a version 2 step runs a shell command; add run: <command>',
    ]);
  });

  it("rejects image in a version 1 spec", () => {
    expect(problems(`name: x\nsteps:\n  - run: a\n    image: alpine\n${template}`)).toEqual([
      '4:5: steps[0].image: "image" is the version 3 spelling; write "container" in a version 1 spec, or set "version: 3"',
    ]);
  });

  it("rejects image and container together", () => {
    expect(
      problems(
        `version: 3\nname: x\nsteps:\n  - run: a\n    image: alpine\n    container: alpine\n${template}`,
      ),
    ).toEqual([
      '5:5: steps[0].image: "image" and "container" name the same thing; keep one of them',
    ]);
  });

  it("lists the known agent types for an unknown codingAgent.type", () => {
    expect(
      problems(`version: 3
name: x
steps:
  - codingAgent: {type: codx, prompt: hi}
    image: node
  - codingAgent: {type: aider, prompt: hi}
    image: node
${template}`),
    ).toEqual([
      '4:25: steps[0].codingAgent.type: unknown coding agent type "codx"; did you mean "codex"? Known types: codex, claude-code, opencode, gemini, acp',
      '6:25: steps[1].codingAgent.type: unknown coding agent type "aider"; known types: codex, claude-code, opencode, gemini, acp',
    ]);
  });

  describe("acp steps (a Deckhand extension): any provider over ACP", () => {
    const providers = {
      has: (id: string) => ["codex", "opencode", "scripted"].includes(id),
      ids: () => ["codex", "opencode", "scripted"],
      refusal: (id: string) =>
        id === "deckhand"
          ? "deckhand is Deckhand's native agent, not an ACP agent; name an ACP provider"
          : undefined,
    };
    const problemsWith = (text: string) =>
      parseBatchSpec(text, { file: "spec.yaml", acpProviders: providers }).diagnostics.map(
        (diagnostic) => formatDiagnostic(diagnostic).slice("spec.yaml".length + 1),
      );

    it("accepts a provider and a permission policy, with no image", () => {
      const result = parseBatchSpec(
        `version: 3
name: x
steps:
  - codingAgent:
      type: acp
      provider: opencode
      prompt: Update \${{ repository.name }}
      permissions: allow-all
${template}`,
        { file: "spec.yaml", acpProviders: providers },
      );
      expect(result.diagnostics).toEqual([]);
      expect(result.spec?.steps).toEqual([
        {
          codingAgent: {
            type: "acp",
            provider: "opencode",
            prompt: "Update ${{ repository.name }}",
            permissions: "allow-all",
          },
        },
      ]);
    });

    it("refuses an unknown provider where it is written, and names the ones there are", () => {
      expect(
        problemsWith(`version: 3
name: x
steps:
  - codingAgent: {type: acp, provider: opencod, prompt: hi}
  - codingAgent: {type: acp, provider: deckhand, prompt: hi}
${template}`),
      ).toEqual([
        '4:40: steps[0].codingAgent.provider: unknown provider "opencod"; did you mean "opencode"? ACP providers: codex, opencode, scripted',
        '5:40: steps[1].codingAgent.provider: unknown provider "deckhand"; deckhand is Deckhand\'s native agent, not an ACP agent; name an ACP provider',
      ]);
    });

    it("needs a provider, no image, and keeps provider and permissions to acp steps", () => {
      expect(
        problemsWith(`version: 3
name: x
steps:
  - codingAgent: {type: acp, prompt: hi}
  - codingAgent: {type: acp, provider: codex, prompt: hi}
    image: node
  - codingAgent: {type: codex, provider: codex, prompt: hi, permissions: deny}
    image: node
  - codingAgent: {type: acp, provider: codex, prompt: hi, permissions: sometimes}
${template}`),
      ).toEqual([
        '4:5: steps[0].codingAgent: missing "provider": an acp codingAgent step names the Deckhand provider to run, e.g. provider: opencode',
        `6:5: steps[1].image: an acp codingAgent step runs the provider's agent on the executor's machine, sandboxed to the workspace, not in a container image; remove "image"`,
        '7:32: steps[2].codingAgent.provider: "provider" belongs to a codingAgent of type acp (a Deckhand provider run over ACP); set type: acp, or remove "provider"',
        '7:61: steps[2].codingAgent.permissions: "permissions" belongs to a codingAgent of type acp (a Deckhand provider run over ACP); set type: acp, or remove "permissions"',
        expect.stringContaining("steps[3].codingAgent.permissions"),
      ]);
    });

    it("leaves the provider unchecked where no catalogue of providers is known", () => {
      expect(
        problems(
          `version: 3\nname: x\nsteps:\n  - codingAgent: {type: acp, provider: mine, prompt: hi}\n${template}`,
        ),
      ).toEqual([]);
    });
  });

  it("requires version 3 for changesetHooks", () => {
    expect(
      problems(`name: x
changesetHooks:
  onCIFailure:
    steps:
      - run: fix
        image: alpine
`),
    ).toEqual([
      '2:1: changesetHooks: changesetHooks need version 3; add "version: 3" at the top of the spec',
    ]);
  });

  it("accepts hook steps with maxAttempts in version 3 and rejects maxAttempts below 1", () => {
    const hooks = (attempts: number) => `version: 3
name: x
changesetHooks:
  onMergeConflict:
    steps:
      - run: git rebase
        image: alpine/git
        maxAttempts: ${attempts}
`;
    const valid = parseBatchSpec(hooks(2), { file: "spec.yaml" });
    expect(valid.diagnostics).toEqual([]);
    expect(valid.spec?.changesetHooks).toEqual({
      onMergeConflict: { steps: [{ run: "git rebase", container: "alpine/git", maxAttempts: 2 }] },
    });
    expect(problems(hooks(0))).toEqual([
      "8:22: changesetHooks.onMergeConflict.steps[0].maxAttempts: must be at least 1; got 0",
    ]);
  });

  it("rejects maxAttempts on an ordinary step", () => {
    expect(
      problems(`name: x\nsteps:\n  - run: a\n    container: b\n    maxAttempts: 2\n${template}`),
    ).toEqual([
      '5:5: steps[0].maxAttempts: unknown field "maxAttempts"; remove it (allowed here: run, container, image, codingAgent, env, files, outputs, mount, if)',
    ]);
  });

  it("requires a changesetTemplate when there are steps", () => {
    expect(problems("name: x\nsteps:\n  - run: a\n    container: b\n")).toEqual([
      "2:1: steps: the spec has steps but no changesetTemplate; add a changesetTemplate (title, branch and commit.message) so the changes become changesets",
    ]);
  });

  it("allows a spec that only imports changesets", () => {
    const result = parseBatchSpec(
      'name: x\nimportChangesets:\n  - repository: github.com/a/b\n    externalIDs: [1, "2"]\n',
      {
        file: "spec.yaml",
      },
    );
    expect(result.diagnostics).toEqual([]);
  });
});

describe("parseBatchSpec: on, env, files, mounts, published", () => {
  it("rejects an on entry with both a query and a repository, or neither", () => {
    expect(
      problems(`name: x
on:
  - repositoriesMatchingQuery: a
    repository: b
  - branch: main
`),
    ).toEqual([
      '3:5: on[0]: an "on" entry has either "repositoriesMatchingQuery" or "repository", not both; split it into two entries',
      '5:5: on[1]: an "on" entry needs "repositoriesMatchingQuery" (a search query) or "repository" (a repository name)',
    ]);
  });

  it("rejects branch together with branches, and branches on a query", () => {
    expect(
      problems(`name: x
on:
  - repository: a
    branch: main
    branches: [dev]
  - repositoriesMatchingQuery: q
    branch: main
`),
    ).toEqual([
      '5:5: on[0].branches: set either "branch" or "branches", not both',
      '7:5: on[1].branch: "branch" belongs to a "repository" entry; a repositoriesMatchingQuery entry selects branches through its query',
    ]);
  });

  it("accepts env as a map and as a list of names and one-key maps", () => {
    for (const env of ["{A: b, C: d}", "[A, {B: c}]"]) {
      const result = parseBatchSpec(
        `name: x\nsteps:\n  - run: a\n    container: b\n    env: ${env}\n${template}`,
        {
          file: "spec.yaml",
        },
      );
      expect(result.diagnostics).toEqual([]);
    }
  });

  it("rejects an env list entry with more than one variable", () => {
    expect(
      problems(
        `name: x\nsteps:\n  - run: a\n    container: b\n    env:\n      - {A: b, C: d}\n${template}`,
      ),
    ).toEqual([
      "6:9: steps[0].env[0]: an env list entry is a variable name or a map with exactly one variable ({NAME: value}); got 2 variables, so give each its own list entry",
    ]);
  });

  it("rejects commas (and other --mount separators) in mount paths, mountpoints and files keys", () => {
    expect(
      problems(`name: x
steps:
  - run: a
    container: b
    mount:
      - path: ./a,readonly
        mountpoint: /x
      - path: ./b
        mountpoint: "/y,\\"z"
    files:
      /tmp/a,b: hi
${template}`),
    ).toEqual([
      '6:15: steps[0].mount[0].path: mount path must not contain a comma (","): the container runtime reads --mount options as comma-separated values, so it would inject extra mount arguments; rename the file or choose another path',
      '9:21: steps[0].mount[1].mountpoint: mount mountpoint must not contain a comma (","): the container runtime reads --mount options as comma-separated values, so it would inject extra mount arguments; rename the file or choose another mountpoint',
      '11:7: steps[0].files["/tmp/a,b"]: file path must not contain a comma (","): files are mounted with --mount, whose options are comma-separated values, so it would inject extra mount arguments; choose another path',
    ]);
  });

  it("rejects a double quote in a mountpoint, naming it", () => {
    expect(
      problems(
        `name: x\nsteps:\n  - run: a\n    container: b\n    mount:\n      - {path: a, mountpoint: 'x"y'}\n${template}`,
      ),
    ).toEqual([
      '6:31: steps[0].mount[0].mountpoint: mount mountpoint must not contain a double quote ("): the container runtime reads --mount options as comma-separated values, so it would inject extra mount arguments; rename the file or choose another mountpoint',
    ]);
  });

  it("accepts every form of published and rejects other values at the rule", () => {
    for (const published of [
      "null",
      "true",
      "false",
      "draft",
      "[{'github.com/*': true}, {'github.com/a/b@dev': draft}]",
    ]) {
      const result = parseBatchSpec(`name: x\n${template}  published: ${published}\n`, {
        file: "spec.yaml",
      });
      expect(result.diagnostics).toEqual([]);
    }
    expect(problems(`name: x\n${template}  published:\n    - github.com/*: yes\n`)).toEqual([
      '8:21: changesetTemplate.published[0]["github.com/*"]: expected a boolean (true or false) or "draft", got the string "yes"',
    ]);
    expect(problems(`name: x\n${template}  published: sometimes\n`)).toEqual([
      '7:14: changesetTemplate.published: expected null, a boolean (true or false), "draft" or a list, got the string "sometimes"',
    ]);
  });

  it("rejects a publish rule with two patterns, and a malformed pattern", () => {
    expect(
      problems(`name: x\n${template}  published:\n    - {a: true, b: false}\n    - "[a": true\n`),
    ).toEqual([
      '8:7: changesetTemplate.published[0]: a publish rule is a map with exactly one pattern ({"<repository glob>[@<branch>]": true | false | "draft"}); got 2 patterns, so give each its own list entry',
      '9:7: changesetTemplate.published[1]["[a"]: invalid glob pattern "[a": a "[" is never closed with "]"',
    ]);
  });

  it("rejects a publish rule whose @branch is a glob or no branch name, since it is compared exactly", () => {
    expect(
      problems(
        `name: x\n${template}  published:\n    - github.com/acme/api@release-*: true\n    - github.com/acme/*@feature/a: draft\n    - github.com/acme/*@: false\n`,
      ),
    ).toEqual([
      '8:7: changesetTemplate.published[0]["github.com/acme/api@release-*"]: the branch after "@" is compared exactly with each changeset\'s branch, and "release-*" is not a branch name (must not contain spaces, control characters or any of ~ ^ : ? * [ \\), so this rule never matches; name one branch per rule',
    ]);
  });

  it("rejects a malformed workspaces glob", () => {
    expect(problems("name: x\nworkspaces:\n  - rootAtLocationOf: go.mod\n    in: '{a'\n")).toEqual([
      '4:9: workspaces[0].in: invalid glob pattern "{a": a "{" is never closed with "}"',
    ]);
  });
});

describe("parseBatchSpec: templates", () => {
  it("reports an unknown variable at its line and column inside a block scalar", () => {
    expect(
      problems(`name: x
steps:
  - run: |
      echo one
      echo \${{ repository.nmae }}
    container: alpine
${template}`),
    ).toEqual([
      '5:16: steps[0].run: unknown variable "repository.nmae"; did you mean "repository.name"?',
    ]);
  });

  it("reports an unknown function with its position and a suggestion", () => {
    expect(
      problems(`name: x
steps:
  - run: echo \${{ jion repository.search_result_paths " " }}
    container: alpine
${template}`),
    ).toEqual(['3:19: steps[0].run: unknown function "jion"; did you mean "join"?']);
  });

  it("reports a template syntax error with its position", () => {
    expect(
      problems(
        `name: x\nsteps:\n  - run: echo \${{ repository.name\n    container: a\n${template}`,
      ),
    ).toEqual(['3:15: steps[0].run: unclosed "${{": end the expression with "}}"']);
  });

  it("allows outputs of earlier steps and rejects outputs nobody declares", () => {
    expect(
      problems(`name: x
steps:
  - run: echo \${{ outputs.later }}
    container: a
  - run: go list
    container: golang
    outputs:
      later:
        value: \${{ step.stdout }}
      modules:
        value: \${{ step.stdout }}
        format: json
  - run: echo \${{ outputs.later }} \${{ outputs.modules.main }} \${{ outputs.later.x }}
    container: a
${template}`),
    ).toEqual([
      '3:19: steps[0].run: unknown output "outputs.later": no earlier step defines an output named "later"; declare it under a step\'s outputs',
      '13:68: steps[2].run: "outputs.later" is a string and has no field "x"; set "format: json" or "format: yaml" on the output to read its fields',
    ]);
  });

  it("gives changeset templates batch_change_link but not step results", () => {
    expect(
      problems(`name: x
changesetTemplate:
  title: \${{ batch_change_link }} \${{ step.stdout }}
  branch: b
  commit:
    message: m
`),
    ).toEqual([
      '3:39: changesetTemplate.title: unknown variable "step.stdout"; did you mean "steps.stdout"?',
    ]);
  });

  it("checks the templates of hook steps and the codingAgent prompt", () => {
    expect(
      problems(`version: 3
name: x
changesetHooks:
  onCIFailure:
    steps:
      - codingAgent:
          type: codex
          prompt: "Fix CI in \${{ repository.nam }}"
        image: node
`),
    ).toEqual([
      '8:34: changesetHooks.onCIFailure.steps[0].codingAgent.prompt: unknown variable "repository.nam"; did you mean "repository.name"?',
    ]);
  });

  it("checks templates in env, files, if, and the whole changeset template", () => {
    expect(
      problems(`name: x
steps:
  - run: a
    container: b
    if: \${{ matches repository.name "[x" }}
    env:
      A: \${{ nope }}
    files:
      /tmp/f: \${{ join "a" }}
changesetTemplate:
  title: t
  body: \${{ batch_change.nam }}
  branch: \${{ steps.paths }}
  commit:
    message: m
    author:
      name: \${{ repository.owner }}
      email: a@b.c
`),
    ).toEqual([
      '5:37: steps[0].if: invalid glob pattern "[x": a "[" is never closed with "]"',
      '7:14: steps[0].env.A: unknown variable "nope"; available here: repository, batch_change, outputs, previous_step, step, steps',
      '9:19: steps[0].files["/tmp/f"]: join takes 2 arguments (join LIST SEPARATOR), got 1',
      '12:13: changesetTemplate.body: unknown variable "batch_change.nam"; did you mean "batch_change.name"?',
      '13:15: changesetTemplate.branch: unknown variable "steps.paths"; did you mean "steps.path"?',
      '17:17: changesetTemplate.commit.author.name: unknown variable "repository.owner"; repository has name, branch, search_result_paths',
    ]);
  });
});

describe("parseBatchSpec: what Sourcegraph's YAML parser (gopkg.in/yaml.v3) accepts", () => {
  function parsed(text: string) {
    const result = parseBatchSpec(text, { file: "spec.yaml" });
    expect(result.diagnostics).toEqual([]);
    return result.spec;
  }

  it("accepts a double-quoted scalar whose continuation lines start at column 0", () => {
    expect(
      parsed('name: x\ndescription: "first line\nsecond line at column 0"\n')?.description,
    ).toBe("first line second line at column 0");
  });

  it("accepts a single-quoted scalar at column 0, with its '' escape", () => {
    expect(parsed("name: x\ndescription: 'first line\nit''s at column 0'\n")?.description).toBe(
      "first line it's at column 0",
    );
  });

  it("accepts under-indented continuation lines in nested maps and lists, closing quote included", () => {
    const spec = parsed(`name: x
steps:
  - run: "echo one
echo two"
    container: "alpine:3"
changesetTemplate:
  title: "a
 b
c"
  branch: b
  commit:
    message: "m
"
`);
    expect(spec?.steps?.[0]?.run).toBe("echo one echo two");
    expect(spec?.steps?.[0]?.container).toBe("alpine:3");
    expect(spec?.changesetTemplate?.title).toBe("a b c");
    expect(spec?.changesetTemplate?.commit.message).toBe("m ");
  });

  it("folds under-indented lines like indented ones: blank lines, tabs and escaped line breaks", () => {
    expect(parsed('name: x\ndescription: "a\n\nb\n\tc \\\nd"\n')?.description).toBe("a\nb c d");
  });

  it("accepts Windows line endings in a quoted scalar at column 0", () => {
    expect(parsed('name: x\r\ndescription: "a\r\nb"\r\n')?.description).toBe("a b");
  });

  it("keeps positions after such a scalar exact for the text as written", () => {
    expect(
      problems(`name: x
description: "one
two"
steps:
  - run: "echo one
echo two"
    container: alpine
    env:
      A: \${{ repository.nmae }}
    contaner: alpine
${template}`),
    ).toEqual([
      '9:14: steps[0].env.A: unknown variable "repository.nmae"; did you mean "repository.name"?',
      '10:5: steps[0].contaner: unknown field "contaner"; did you mean "container"?',
    ]);
  });

  it("still refuses what yaml.v3 refuses: a plain scalar continued at column 0 outside [...] and {...}", () => {
    expect(problems("name: x\ndescription: first\nsecond\n")).toEqual([
      "3:1: invalid YAML: Implicit map keys need to be followed by map values",
    ]);
  });

  it("still refuses what yaml.v3 refuses: a document marker inside a quoted scalar, a missing quote", () => {
    expect(problems('name: x\ndescription: "a\n---\nb"\n')).toEqual([
      '2:16: invalid YAML: Missing closing "quote',
      '3:1: invalid YAML: a "---" or "..." line ends the spec and more follows; a batch spec is one YAML document (Sourcegraph reads the first and drops the rest), so remove the line or what follows it',
    ]);
    expect(problems('name: x\ndescription: "a\nb\n')).toEqual([
      '4:1: invalid YAML: Missing closing "quote',
    ]);
  });

  it("accepts a flow list or map whose later lines start at column 0, nested ones too", () => {
    const spec = parsed(`name: x
on: [{repository: github.com/a/b},
{repository: github.com/c/d, branches: [
main, dev]}]
steps:
  - run: echo
    container: alpine
    env: {A: "1",
B: "2"}
${template}`);
    expect(spec?.on).toEqual([
      { repository: "github.com/a/b" },
      { repository: "github.com/c/d", branches: ["main", "dev"] },
    ]);
    expect(spec?.steps?.[0]?.env).toEqual({ A: "1", B: "2" });
  });

  it("folds a plain or quoted scalar continued at column 0 inside a flow collection", () => {
    expect(
      parsed('name: x\non: [{repository: github.com/a\n/b}, {repository: "c\nd"}]\n')?.on,
    ).toEqual([{ repository: "github.com/a /b" }, { repository: "c d" }]);
  });

  it("keeps positions after such a flow collection exact for the text as written", () => {
    expect(
      problems(`name: x
steps:
  - run: echo
    container: alpine
    env: {A: 1,
B: "2"}
    contaner: alpine
${template}`),
    ).toEqual([
      '5:14: steps[0].env.A: expected a string, got a whole number; put it in quotes ("1") to use it as text',
      '7:5: steps[0].contaner: unknown field "contaner"; did you mean "container"?',
    ]);
  });

  it("reports a flow list that is never closed at its first line at column 0, as before", () => {
    expect(problems("name: x\non: [{repository: a},\nnme: x\n")).toEqual([
      "3:1: invalid YAML: Flow sequence in block collection must be sufficiently indented and end with a ]",
    ]);
  });

  it("accepts a trailing --- or ... after the spec, as yaml.v3 reads only the first document", () => {
    for (const text of ["name: x\n---\n", "name: x\n...\n# end\n", "---\nname: x\n---\n# c\n"]) {
      expect(parsed(text)?.name).toBe("x");
    }
  });

  it("refuses a second document with data, which Sourcegraph would silently drop", () => {
    expect(problems("name: x\n---\nname: y\n")).toEqual([
      '2:1: invalid YAML: a "---" or "..." line ends the spec and more follows; a batch spec is one YAML document (Sourcegraph reads the first and drops the rest), so remove the line or what follows it',
    ]);
  });

  it("reads yes, no, on and off as strings, as yaml.v3 does (YAML 1.2), so on: stays a key", () => {
    expect(parsed("name: x\ndescription: yes\non: []\n")).toMatchObject({
      description: "yes",
      on: [],
    });
    expect(problems(`name: x\n${template}  published: yes\n`)).toEqual([
      '7:14: changesetTemplate.published: expected null, a boolean (true or false), "draft" or a list, got the string "yes"',
    ]);
  });

  it('suggests 2 for version: "v2" (a form once in Sourcegraph\'s own examples) and for a quoted "2"', () => {
    expect(problems('version: "v2"\nname: x\n')).toEqual([
      '1:10: version: must be 1, 2 or 3; got "v2"; did you mean 2?',
    ]);
    expect(problems('version: "2"\nname: x\n')).toEqual([
      '1:10: version: must be 1, 2 or 3; got "2"; did you mean 2 (without quotes)?',
    ]);
    expect(problems('version: "v9"\nname: x\n')).toEqual([
      '1:10: version: must be 1, 2 or 3; got "v9"',
    ]);
  });

  it("parses the constructs of public batch specs: comments, 4-space nesting, quotes and $ in plain scalars, files, transformChanges", () => {
    const spec = parsed(`name: e2e-test-batch-change
description: Add Hello World to READMEs

on:
  - repository: github.com/sourcegraph/automation-testing
    # This branch is never changing - hopefully.
    branch: executors-e2e
  - repositoriesMatchingQuery: repo:github.com/sourcegraph/sourcegraph

steps:
  - run: IFS=$'\\n'; echo Hello World | tee -a $(find -name README.md)
    container: ubuntu:18.04
  - run: |
      cat /tmp/search-results | while read file;
      do
        ruplacer --subvert whitelist allowlist --go \${file} || echo "nothing to replace";
      done
    container: ruplacer
    files:
      /tmp/search-results: \${{ join repository.search_result_paths "\\n" }}

transformChanges:
  group:
    - directory: client
      branch: hello-world-client # will replace the \`branch\` in the \`changesetTemplate\`

changesetTemplate:
    title: Replace equivalent fmt.Sprintf calls with strconv.Itoa
    body: This replaces \`fmt.Sprintf("%d", integer)\` calls 
    branch: batches/\${{batch_change.name}} # This branch is the default branch and will be
                      # overwritten for each additional changeset.
    commit:
        message: Append Hello World to all README.md files
        author:
          name: Lisa Coder
          email: lisa@example.com
    published: false # Do not publish any changes to the code hosts yet
`);
    expect(spec?.steps?.[0]?.run).toBe(
      "IFS=$'\\n'; echo Hello World | tee -a $(find -name README.md)",
    );
    expect(spec?.steps?.[1]?.files).toEqual({
      "/tmp/search-results": '${{ join repository.search_result_paths "\\n" }}',
    });
    expect(spec?.changesetTemplate).toMatchObject({
      body: 'This replaces `fmt.Sprintf("%d", integer)` calls',
      branch: "batches/${{batch_change.name}}",
      published: false,
    });
  });

  it("lexes a spec the yaml package reads without an error once, and one it must mend again", () => {
    const lex = vi.spyOn(Lexer.prototype, "lex");
    try {
      parsed('name: x\ndescription: "one line"\non: [{repository: a}, {repository: b}]\n');
      expect(lex).toHaveBeenCalledTimes(1);
      lex.mockClear();
      // The mended text is lexed once to find the repair, once more to see there is no other,
      // and parsed.
      parsed('name: x\ndescription: "first line\nsecond line at column 0"\n');
      expect(lex.mock.calls.length).toBeGreaterThan(1);
    } finally {
      lex.mockRestore();
    }
  });
});
