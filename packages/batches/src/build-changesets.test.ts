import { join } from "node:path";
import type { BatchRunEvent } from "@deckhand/wire";
import { BatchRunEventSchema } from "@deckhand/wire";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { repositoryAt, runSpecLocally, temporaryDirectory } from "../test/support.ts";
import { BatchesError } from "./batches-error.ts";
import { buildChangesets } from "./build-changesets.ts";

let scratch: ReturnType<typeof temporaryDirectory>;
let root: string;
beforeEach(() => {
  scratch = temporaryDirectory();
  root = join(scratch.path, "code");
  repositoryAt(join(root, "github.com/acme/api"), { "README.md": "# api\n" });
  repositoryAt(join(root, "github.com/acme/web"), { "README.md": "# web\n" });
  repositoryAt(join(root, "github.com/acme/docs"), { "README.md": "# docs\n" });
  repositoryAt(join(root, "github.com/acme/mono"), {
    "README.md": "# mono\n",
    "a/package.json": "{}\n",
    "b/package.json": "{}\n",
  });
});
afterEach(() => scratch.remove());

const run = (yaml: string) => runSpecLocally(yaml, { root, scratch: scratch.path });

describe("buildChangesets", () => {
  it("gives each changed workspace one changeset from the v1 changesetTemplate", async () => {
    const { spec, outcomes } = await run(`
name: rename
description: Renames things
on:
  - repository: github.com/acme/api
  - repository: github.com/acme/web
  - repository: github.com/acme/docs
steps:
  - run: |
      if [ "\${{ repository.name }}" != github.com/acme/docs ]; then
        printf 'one\\ntwo\\n' >> README.md; echo new > NEW.md
      fi
      echo "done"
    container: alpine:3
    outputs:
      said:
        value: \${{ step.stdout }}
changesetTemplate:
  title: Rename in \${{ repository.name }}
  body: \${{ outputs.said }}\${{ join steps.modified_files "," }} (\${{ batch_change.description }})
  branch: batch/\${{ batch_change.name }}
  commit:
    message: rename
    author:
      name: Deck Hand
      email: deck@example.com
  published:
    - github.com/acme/*: draft
    - github.com/acme/web: true
`);
    const events: BatchRunEvent[] = [];
    const changesets = buildChangesets(spec, outcomes, { onEvent: (event) => events.push(event) });
    expect(
      changesets.map(({ diff, base_revision, ...changeset }) => ({
        ...changeset,
        hasDiff: diff.includes("+two"),
        revision: base_revision.length,
      })),
    ).toEqual([
      {
        repository: "github.com/acme/api",
        base_branch: "main",
        path: "",
        branch: "batch/rename",
        title: "Rename in github.com/acme/api",
        body: "done\nREADME.md (Renames things)",
        commit_message: "rename",
        commit_author: { name: "Deck Hand", email: "deck@example.com" },
        published: "draft",
        stats: { files: 2, insertions: 3, deletions: 0 },
        hasDiff: true,
        revision: 40,
      },
      expect.objectContaining({
        repository: "github.com/acme/web",
        published: true,
        stats: { files: 2, insertions: 3, deletions: 0 },
      }),
    ]);
    expect(events.map((event) => BatchRunEventSchema.parse(event).type)).toEqual([
      "changeset",
      "changeset",
    ]);
  });

  it("transformChanges.group moves the changes under a directory to a changeset on its own branch", async () => {
    const { spec, outcomes } = await run(`
name: grouped
on:
  - repository: github.com/acme/mono
steps:
  - run: echo x >> README.md && echo x >> a/package.json && echo x >> b/package.json && mkdir -p a/deep && echo y > a/deep/file
    container: alpine:3
transformChanges:
  group:
    - directory: a
      branch: grouped-a
    - directory: a/deep
      branch: grouped-a-deep
    - directory: b
      branch: never
      repository: github.com/acme/other
changesetTemplate:
  title: Grouped
  branch: grouped
  commit:
    message: grouped
`);
    const changesets = buildChangesets(spec, outcomes);
    expect(
      changesets.map((changeset) => [
        changeset.branch,
        changeset.stats.files,
        changeset.diff.match(/^diff --git a\/(\S+)/gm),
      ]),
    ).toEqual([
      ["grouped", 2, ["diff --git a/README.md", "diff --git a/b/package.json"]],
      ["grouped-a", 1, ["diff --git a/a/package.json"]],
      ["grouped-a-deep", 1, ["diff --git a/a/deep/file"]],
    ]);
  });

  it("refuses two changesets on the same branch of one repository before returning any", async () => {
    const { spec, outcomes } = await run(`
name: clash
on:
  - repository: github.com/acme/mono
workspaces:
  - rootAtLocationOf: package.json
steps:
  - run: echo x >> package.json
    container: alpine:3
changesetTemplate:
  title: Clash
  branch: clash
  commit:
    message: clash
`);
    expect(outcomes).toHaveLength(2);
    const events: BatchRunEvent[] = [];
    let caught: unknown;
    try {
      buildChangesets(spec, outcomes, { onEvent: (event) => events.push(event) });
    } catch (error) {
      caught = error;
    }
    expect(BatchesError.isInstance(caught)).toBe(true);
    expect((caught as BatchesError).code).toBe("invalid_changeset");
    expect((caught as BatchesError).message).toContain(
      "two changesets in github.com/acme/mono would push to branch clash (workspace a and workspace b)",
    );
    expect(events).toEqual([]);
  });

  it("a sparse monorepo workspace's diff holds its own changes, not the files left out of the checkout", async () => {
    const { spec, outcomes } = await run(`
name: sparse
on:
  - repository: github.com/acme/mono
workspaces:
  - rootAtLocationOf: package.json
    onlyFetchWorkspace: true
steps:
  - run: echo changed >> package.json && echo new > new.txt
    container: alpine:3
changesetTemplate:
  title: Sparse
  branch: sparse-\${{ steps.path }}
  commit:
    message: sparse
`);
    const changesets = buildChangesets(spec, outcomes);
    expect(
      changesets.map((changeset) => [
        changeset.branch,
        changeset.path,
        changeset.diff.match(/^diff --git a\/(\S+)/gm),
      ]),
    ).toEqual([
      ["sparse-a", "a", ["diff --git a/a/new.txt", "diff --git a/a/package.json"]],
      ["sparse-b", "b", ["diff --git a/b/new.txt", "diff --git a/b/package.json"]],
    ]);
  });

  it("a workspace whose steps change nothing gives no changeset", async () => {
    const { spec, outcomes } = await run(`
name: nothing
on:
  - repository: github.com/acme/api
steps:
  - run: echo looked
    container: alpine:3
changesetTemplate:
  title: Nothing
  branch: nothing
  commit:
    message: nothing
`);
    expect(outcomes[0]!.result!.diff).toBe("");
    expect(buildChangesets(spec, outcomes)).toEqual([]);
  });

  it("trims rendered fields as src-cli does, so a step output's newline leaves the branch and published matches", async () => {
    // The shape of Sourcegraph's branch-addressing example: each project's branch comes from a
    // step output rendered from `echo`, which ends in a newline; `published` names one branch.
    repositoryAt(join(root, "github.com/acme/projects"), {
      "project1/project.txt": "1\n",
      "project2/project.txt": "2\n",
      "project3/project.txt": "3\n",
    });
    const { spec, outcomes } = await run(`
name: branch-addressing
description: One changeset per project
on:
  - repository: github.com/acme/projects
workspaces:
  - rootAtLocationOf: project.txt
steps:
  - run: |
      echo changed >> project.txt
      basename "$PWD"
    container: alpine:3
    outputs:
      project:
        value: \${{ step.stdout }}
changesetTemplate:
  title: |
    Change \${{ outputs.project }}
  body: \${{ outputs.project }}
  branch: thorsten/branch-addressing-\${{ outputs.project }}
  commit:
    message: Change \${{ outputs.project }}
    author:
      name: "\${{ outputs.project }} "
      email: "deck@example.com\\n"
  published:
    - github.com/acme/projects@thorsten/branch-addressing-project1: true
    - github.com/acme/projects@thorsten/branch-addressing-project2: draft
`);
    const changesets = buildChangesets(spec, outcomes);
    expect(
      changesets.map((changeset) => ({
        branch: changeset.branch,
        title: changeset.title,
        body: changeset.body,
        commit_message: changeset.commit_message,
        commit_author: changeset.commit_author,
        published: changeset.published,
      })),
    ).toEqual(
      [1, 2, 3].map((project) => ({
        branch: `thorsten/branch-addressing-project${project}`,
        title: `Change project${project}`,
        body: `project${project}`,
        commit_message: `Change project${project}`,
        commit_author: { name: `project${project}`, email: "deck@example.com" },
        published: project === 1 ? true : project === 2 ? "draft" : null,
      })),
    );
  });

  it("refuses a rendered branch git would refuse at preview, naming the field, the workspace and the value", async () => {
    const { spec, outcomes } = await run(`
name: bad-branch
on:
  - repository: github.com/acme/api
steps:
  - run: echo x >> README.md && printf 'two words\\nand a line'
    container: alpine:3
    outputs:
      said:
        value: \${{ step.stdout }}
changesetTemplate:
  title: Bad
  branch: batch/\${{ outputs.said }}
  commit:
    message: bad
`);
    const failure = (() => {
      try {
        buildChangesets(spec, outcomes);
      } catch (error) {
        return error;
      }
      return undefined;
    })();
    expect(BatchesError.isInstance(failure)).toBe(true);
    expect(failure).toMatchObject({ code: "invalid_changeset" });
    expect((failure as Error).message).toBe(
      'changesetTemplate.branch renders to "batch/two words\\nand a line" for github.com/acme/api, which is not a valid git branch name (must not contain spaces, control characters or any of ~ ^ : ? * [ \\); change the template or the output it uses',
    );
  });
});
