// From the workspaces' final step results to changesets: one per workspace from
// `changesetTemplate`, rendered with the results, plus one per `transformChanges.group` that
// takes the changes under its directory onto its own branch. Built all at once and checked
// together, so two changesets that would share a branch in one repository are refused before
// anything is pushed.
import {
  type BatchSpec,
  createChangesetTemplateContext,
  renderTemplate,
  resolvePublished,
  type TemplateContext,
  type TemplateValue,
  type TransformChanges,
} from "@deckhand/batch-spec";
import { errorMessage } from "@deckhand/errors";
import { type BatchChangeset, type BatchRunEvent, branchNameProblem } from "@deckhand/wire";
import { BatchesError } from "./batches-error.ts";
import type { Workspace } from "./resolve-workspaces.ts";
import type { CachedStepResult } from "./step-cache.ts";
import { type ChangedFile, splitDiffSections, templateChangedFiles } from "./workspace-diff.ts";
import { workspaceRef } from "./workspace-run-report.ts";

export interface WorkspaceOutcome {
  workspace: Workspace;
  /** The workspace's final step result (`runWorkspace`'s `result`); null when nothing ran. */
  result: CachedStepResult | null;
}

type Group = NonNullable<TransformChanges["group"]>[number];

function underDirectory(path: string, directory: string): boolean {
  const prefix = directory.replace(/\/+$/, "");
  return prefix === "" || path === prefix || path.startsWith(`${prefix}/`);
}

/** The group a file goes to: the one with the longest directory containing it, if any. */
function groupOf(file: ChangedFile, groups: readonly Group[]): Group | undefined {
  let chosen: Group | undefined;
  for (const group of groups) {
    if (!underDirectory(file.path, group.directory)) continue;
    if (chosen === undefined || group.directory.length >= chosen.directory.length) chosen = group;
  }
  return chosen;
}

function stats(files: readonly ChangedFile[]): BatchChangeset["stats"] {
  return {
    files: files.length,
    insertions: files.reduce((sum, file) => sum + file.insertions, 0),
    deletions: files.reduce((sum, file) => sum + file.deletions, 0),
  };
}

/**
 * A changeset field as src-cli renders it (`RenderChangesetTemplateField`): the template's output
 * with leading and trailing white space trimmed, so the newline an `${{ outputs.x }}` carries
 * from a step's `echo` does not end up in a branch name, a title or a commit message.
 */
function render(
  template: string,
  field: string,
  workspace: Workspace,
  context: TemplateContext,
): string {
  try {
    return renderTemplate(template, context).trim();
  } catch (error) {
    throw new BatchesError(
      "invalid_changeset",
      `changesetTemplate.${field} does not render for ${workspace.repository.name}: ${errorMessage(error)}`,
    );
  }
}

/**
 * Refuses a rendered branch git would refuse, at preview: otherwise every changeset of the run
 * looks fine until `apply` fails on it. Names the field, the workspace and the rendered value.
 */
function checkBranchName(branch: string, workspace: Workspace): void {
  const problem = branch === "" ? "it is empty" : branchNameProblem(branch);
  if (problem === null) return;
  const where =
    workspace.path === ""
      ? workspace.repository.name
      : `${workspace.repository.name} (workspace ${workspace.path})`;
  throw new BatchesError(
    "invalid_changeset",
    `changesetTemplate.branch renders to ${JSON.stringify(branch)} for ${where}, which is not a valid git branch name (${problem}); change the template or the output it uses`,
  );
}

/**
 * The changesets of a run. A workspace without changes gives none. Throws `invalid_changeset`
 * when a template does not render or two changesets share a branch in one repository.
 */
export function buildChangesets(
  spec: BatchSpec,
  outcomes: readonly WorkspaceOutcome[],
  options: { onEvent?: (event: BatchRunEvent) => void } = {},
): BatchChangeset[] {
  const template = spec.changesetTemplate;
  if (template === undefined) return [];
  const changesets: { changeset: BatchChangeset; workspace: Workspace }[] = [];
  for (const { workspace, result } of outcomes) {
    if (result === null || result.diff === "") continue;
    const context = createChangesetTemplateContext({
      repository: {
        name: workspace.repository.name,
        branch: workspace.branch,
        fileMatches: workspace.searchResultPaths,
      },
      batchChange: { name: spec.name, description: spec.description },
      outputs: result.outputs as Record<string, TemplateValue>,
      steps: { changedFiles: templateChangedFiles(result.files), path: workspace.path },
    });
    const field = (value: string, name: string) => render(value, name, workspace, context);
    const common = {
      repository: workspace.repository.name,
      base_branch: workspace.branch,
      base_revision: workspace.revision,
      path: workspace.path,
      title: field(template.title, "title"),
      body: field(template.body ?? "", "body"),
      commit_message: field(template.commit.message, "commit.message"),
      commit_author:
        template.commit.author === undefined
          ? null
          : {
              name: field(template.commit.author.name, "commit.author.name"),
              email: field(template.commit.author.email, "commit.author.email"),
            },
    };
    const groups = (spec.transformChanges?.group ?? []).filter(
      (group) => group.repository === undefined || group.repository === workspace.repository.name,
    );
    const sections = splitDiffSections(result.diff);
    if (sections.length !== result.files.length) {
      throw new BatchesError(
        "invalid_changeset",
        `the diff of ${workspace.repository.name} has ${sections.length} file sections but ${result.files.length} changed files; run again with the cache cleared`,
      );
    }
    const byBranch = new Map<string, { files: ChangedFile[]; sections: string[] }>();
    const defaultBranch = field(template.branch, "branch");
    checkBranchName(defaultBranch, workspace);
    result.files.forEach((file, index) => {
      const branch = groupOf(file, groups)?.branch ?? defaultBranch;
      const entry = byBranch.get(branch) ?? { files: [], sections: [] };
      entry.files.push(file);
      entry.sections.push(sections[index]!);
      byBranch.set(branch, entry);
    });
    // The template's changeset first, then the groups in the order the spec lists them.
    const order = [defaultBranch, ...groups.map((group) => group.branch)];
    for (const branch of new Set(order)) {
      const entry = byBranch.get(branch);
      if (entry === undefined) continue;
      changesets.push({
        workspace,
        changeset: {
          ...common,
          branch,
          published: resolvePublished(template.published, workspace.repository.name, branch),
          diff: entry.sections.join(""),
          stats: stats(entry.files),
        },
      });
    }
  }
  const seen = new Map<string, Workspace>();
  for (const { changeset, workspace } of changesets) {
    const key = `${changeset.repository}\0${changeset.branch}`;
    const other = seen.get(key);
    if (other !== undefined) {
      const where = (candidate: Workspace) =>
        candidate.path === "" ? "the repository root" : `workspace ${candidate.path}`;
      throw new BatchesError(
        "invalid_changeset",
        `two changesets in ${changeset.repository} would push to branch ${changeset.branch} (${where(other)} and ${where(workspace)}); make changesetTemplate.branch unique per workspace, e.g. with \${{ steps.path }}, or change the transformChanges groups`,
      );
    }
    seen.set(key, workspace);
  }
  for (const { changeset, workspace } of changesets) {
    options.onEvent?.({
      type: "changeset",
      workspace: workspaceRef(workspace),
      changeset,
    });
  }
  return changesets.map(({ changeset }) => changeset);
}
