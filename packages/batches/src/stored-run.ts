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
});
export type StoredWorkspaceDefinition = z.infer<typeof StoredWorkspaceDefinitionSchema>;

export function storeWorkspaceDefinition(workspace: Workspace): StoredWorkspaceDefinition {
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
  };
}

/**
 * The stored run's options. Not strict, as the API's schema is: a row written by a newer version
 * parses to what this one knows.
 */
export const StoredRunOptionsSchema = z.object(BatchRunOptionsSchema.shape);
