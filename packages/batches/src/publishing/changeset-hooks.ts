// Changeset hooks (spec version 3): when a tracked pull request's checks fail (`onCIFailure`) or
// it stops merging cleanly (`onMergeConflict`), the hook's steps run on the changeset's branch as
// it is on the host now, in a fresh checkout, like a workspace's steps (run and codingAgent, with
// the same environment policy and model-provider lease); what they change is committed on top
// and pushed with a lease on the head they ran on, so a person's newer push is never overwritten.
import { randomUUID } from "node:crypto";
import { mkdir } from "node:fs/promises";
import { join, resolve } from "node:path";
import type { BatchSpec, HookStep } from "@deckhand/batch-spec";
import { type CodeHostConnection, pushBranch } from "@deckhand/code-hosts";
import type { changesets, workspaces } from "@deckhand/db";
import { runGit } from "@deckhand/git";
import { BatchesError } from "../batches-error.ts";
import { checkoutWorkspace } from "../checkout-workspace.ts";
import type { CodeHost } from "../code-host-config.ts";
import { codeHostGitEnvironment } from "../code-host-credentials.ts";
import type { ExecutionEnvironment } from "../execution-environment.ts";
import { locateRepository } from "../repositories.ts";
import type { Workspace } from "../resolve-workspaces.ts";
import { runWorkspace } from "../run-workspace.ts";
import { MemoryStepCache } from "../step-cache.ts";
import type { StepRuntimeChoice } from "../step-placement.ts";
import { StoredWorkspaceDefinitionSchema } from "../stored-run.ts";
import type { CodeHostAccess } from "./code-host-access.ts";

export type ChangesetHookName = "onCIFailure" | "onMergeConflict";

/** How many times a hook may run for one changeset when its steps do not say. */
export const DEFAULT_HOOK_ATTEMPTS = 3;

/** A hook's attempt limit: the largest `maxAttempts` its steps give, else the default. */
export function hookLimit(steps: readonly HookStep[]): number {
  const limits = steps.flatMap((step) =>
    step.maxAttempts === undefined ? [] : [step.maxAttempts],
  );
  return limits.length === 0 ? DEFAULT_HOOK_ATTEMPTS : Math.max(...limits);
}

export interface HookRunInput {
  hook: ChangesetHookName;
  spec: BatchSpec;
  steps: readonly HookStep[];
  changeset: typeof changesets.$inferSelect;
  workspace: typeof workspaces.$inferSelect;
  specDirectory: string | null;
  connection: CodeHostConnection;
  /** The repository on the host (`owner/name`). */
  repositoryOnHost: string;
  /** The pull request's head commit as the host reported it. */
  headSha: string | null;
  attempt: number;
  /** Where the steps run: the runtime choice of the run that made the changeset. */
  runtime: StepRuntimeChoice;
}

export interface HookRunner {
  /** Runs the hook; `commit` is the commit pushed, or null when the steps changed nothing. */
  run(input: HookRunInput): Promise<{ commit: string | null }>;
}

export interface HookRunnerOptions {
  access: CodeHostAccess;
  codeHosts: () => readonly CodeHost[];
  /**
   * What the process runs steps with, and where its clones (`cacheDirectory`) and hook
   * checkouts (`hookDirectory`) live.
   */
  environment: ExecutionEnvironment;
  timeoutMs?: number;
}

const quiet = ["-c", "core.hooksPath=/dev/null"];

/** The hook runner over the batch engine's checkout, step runner and a leased push. */
export function createHookRunner(options: HookRunnerOptions): HookRunner {
  const steps = options.environment;
  return {
    async run(input) {
      const { changeset } = input;
      const definition = StoredWorkspaceDefinitionSchema.parse(input.workspace.definition);
      const url = definition.repository.url;
      // A git URL host's own password, else the connection's token.
      const gitEnvironment = codeHostGitEnvironment(
        options.codeHosts,
        options.access.gitEnvironment,
      );
      const path = await locateRepository(definition.repository, changeset.baseRevision, {
        codeHosts: options.codeHosts(),
        cacheDirectory: steps.directories.cacheDirectory,
        gitEnvironment,
      });
      const environment = url === null ? undefined : gitEnvironment(url);
      // The branch as the host has it now, fetched into a ref of Deckhand's own.
      const ref = `refs/deckhand/hooks/${randomUUID()}`;
      await runGit(
        [...quiet, "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "origin"].concat(
          `+refs/heads/${changeset.branch}:${ref}`,
        ),
        { cwd: path, ...(environment ? { environment } : {}), timeoutMs: 30 * 60_000 },
      );
      const head = (await runGit(["rev-parse", `${ref}^{commit}`], { cwd: path })).stdout.trim();
      await runGit(["update-ref", "-d", ref], { cwd: path }).catch(() => {});
      const workspace: Workspace = {
        repository: { ...definition.repository, url: url ?? undefined, path },
        branch: changeset.branch,
        revision: head,
        path: changeset.path,
        onlyFetchWorkspace: definition.only_fetch_workspace,
        searchResultPaths: definition.search_result_paths,
        steps: input.steps.map((step, index) => ({ index, step })),
      };
      const directory = join(
        resolve(steps.directories.hookDirectory),
        `hook-${changeset.id}-${input.attempt}-${randomUUID().slice(0, 8)}`,
      );
      await mkdir(resolve(steps.directories.hookDirectory), { recursive: true });
      const checkout = await checkoutWorkspace(workspace, directory);
      try {
        const result = await runWorkspace({
          workspace,
          spec: { ...input.spec, steps: [...input.steps] },
          checkout,
          ...(input.specDirectory !== null ? { specDirectory: input.specDirectory } : {}),
          runtime: input.runtime,
          environment: steps,
          ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
          // Each attempt runs its steps afresh: a hook reacts to the branch as it is now.
          cache: new MemoryStepCache(),
          jobId: `changeset-hook:${changeset.id}:${input.hook}:${input.attempt}`,
        });
        if (result.status !== "completed") {
          throw new BatchesError(
            "hook_failed",
            `${input.hook} ${result.status}: ${result.error ?? "no error given"}`,
          );
        }
        if ((result.result?.diff ?? "") === "") return { commit: null };
        const author = changeset.commitAuthor as { name: string; email: string } | null;
        const identity = author ?? { name: "Deckhand", email: "deckhand@localhost" };
        await runGit(
          [
            ...quiet,
            "commit",
            "--quiet",
            "--no-verify",
            "-m",
            `${input.hook}: ${changeset.title}\n\nDeckhand ran the batch change's ${input.hook} hook (attempt ${input.attempt}).\n`,
          ],
          {
            cwd: checkout.directory,
            environment: {
              GIT_AUTHOR_NAME: identity.name,
              GIT_AUTHOR_EMAIL: identity.email,
              GIT_COMMITTER_NAME: identity.name,
              GIT_COMMITTER_EMAIL: identity.email,
            },
          },
        );
        const commit = (
          await runGit(["rev-parse", "HEAD"], { cwd: checkout.directory })
        ).stdout.trim();
        await pushBranch({
          connection: input.connection,
          repository: input.repositoryOnHost,
          localPath: checkout.directory,
          commit,
          branch: changeset.branch,
          // Only onto the head the steps ran on: a person's push meanwhile is never overwritten.
          expectedRemoteCommit: head,
          environment: steps.outerEnvironment,
        });
        return { commit };
      } finally {
        await checkout.remove().catch(() => {});
      }
    },
  };
}
