// What a batch run keeps in the database between the process that resolves it and the executors
// that run its workspaces: the resolved workspace (where its repository is, which steps apply)
// and the run's options. Read back through these schemas, so a row is a typed value, never
// `unknown` behind a cast.
import { BatchRunOptionsSchema } from "@deckhand/wire";
import { z } from "zod";
import type { Workspace } from "./resolve-workspaces.ts";

const RepositoryHostSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("directory"), root: z.string() }),
  z.object({ type: z.literal("git"), url: z.string(), cachePath: z.string() }),
]);

/**
 * The interactive session a workspace continues (an earlier run's workspace was taken over by
 * it): its work, read when the run was created, is the workspace's result instead of the steps'.
 */
export const StoredTakeoverSchema = z.object({
  session_id: z.string(),
  /** The session's branch, for messages. */
  branch: z.string(),
  /** The commit the session's work is based on. */
  base_revision: z.string(),
  /** The session branch's commit that was read. */
  head: z.string(),
  /** `base_revision..head` as one `git diff --binary --full-index`. */
  diff: z.string(),
  /** The outputs the changeset template sees: those of the workspace taken over. */
  outputs: z.record(z.string(), z.unknown()),
});
export type StoredTakeover = z.infer<typeof StoredTakeoverSchema>;

/** A resolved workspace without its steps (they are the spec's, named by index). */
export const StoredWorkspaceDefinitionSchema = z.object({
  repository: z.object({
    id: z.string(),
    name: z.string(),
    host: RepositoryHostSchema,
    path: z.string(),
    url: z.string().nullable(),
  }),
  only_fetch_workspace: z.boolean(),
  search_result_paths: z.array(z.string()),
  step_indexes: z.array(z.int().min(0)),
  /** Absent for a workspace whose steps run. */
  takeover: StoredTakeoverSchema.optional(),
});
export type StoredWorkspaceDefinition = z.infer<typeof StoredWorkspaceDefinitionSchema>;

export function storeWorkspaceDefinition(
  workspace: Workspace,
  takeover?: StoredTakeover,
): StoredWorkspaceDefinition {
  return {
    repository: {
      id: workspace.repository.id,
      name: workspace.repository.name,
      host: workspace.repository.host,
      path: workspace.repository.path,
      url: workspace.repository.url ?? null,
    },
    only_fetch_workspace: workspace.onlyFetchWorkspace,
    search_result_paths: workspace.searchResultPaths,
    step_indexes: workspace.steps.map((step) => step.index),
    ...(takeover === undefined ? {} : { takeover }),
  };
}

/**
 * The stored run's options. Not strict, as the API's schema is: a row written by a newer version
 * parses to what this one knows.
 */
export const StoredRunOptionsSchema = z.object(BatchRunOptionsSchema.shape);
