// The batch spec format (Sourcegraph versions 1, 2 and 3) as a zod model. The model is
// structural: types, required fields and unknown fields. Rules that depend on other fields
// (the version, run vs codingAgent, mounts) live in validate.ts, so every problem in a spec is
// reported at once with a message written for it. The JSON Schema is generated from this model.
import { AcpStepPermissionsSchema, RolloutSettingsSchema, SpendLimitSchema } from "@deckhand/wire";
import { z } from "zod";

const publishedValue = z
  .union([z.boolean(), z.literal("draft")])
  .meta({ description: 'true to publish, false to leave unpublished, "draft" for a draft.' });

export const PublishedSchema = z
  .union([
    z.null(),
    publishedValue,
    z
      .array(
        z.record(z.string(), publishedValue).meta({
          description:
            'One rule: the key is a repository-name glob, optionally with "@branch"; the value is the published state for matching changesets.',
        }),
      )
      .meta({ description: "Rules in order; the last one that matches a changeset wins." }),
  ])
  .meta({
    description:
      'Whether to publish changesets to the code host: null (decided in the UI), true, false, "draft", or per-repository rules.',
  });

export const OnEntrySchema = z
  .strictObject({
    repositoriesMatchingQuery: z
      .string()
      .optional()
      .meta({ description: "A search query; every repository it matches is included." }),
    repository: z
      .string()
      .optional()
      .meta({ description: "One repository by name, e.g. github.com/owner/name." }),
    branch: z
      .string()
      .optional()
      .meta({ description: "The branch to change in `repository` (default: its default branch)." }),
    branches: z
      .array(z.string())
      .optional()
      .meta({ description: "Several branches to change in `repository`." }),
  })
  .meta({
    description: "Either {repositoriesMatchingQuery} or {repository, branch | branches}, not both.",
  });

export const WorkspaceConfigurationSchema = z
  .strictObject({
    rootAtLocationOf: z
      .string()
      .meta({ description: "A file name; each directory holding it becomes a workspace." }),
    in: z
      .string()
      .optional()
      .meta({ description: "A repository-name glob this configuration applies to." }),
    onlyFetchWorkspace: z
      .boolean()
      .optional()
      .meta({ description: "Download only the workspace's files, not the whole repository." }),
  })
  .meta({ description: "Splits repositories into workspaces (monorepos)." });

export const EnvSchema = z
  .union([
    z.record(z.string(), z.string()).meta({ description: "Variables by name." }),
    z.array(
      z.union([
        z
          .string()
          .meta({ description: "A variable passed through from the runner's environment." }),
        z
          .record(z.string(), z.string())
          .meta({ description: "A one-key map: the variable and its value." }),
      ]),
    ),
  ])
  .meta({
    description:
      "Environment for the step: a map, or a list of names (passed through from the runner) and one-key maps. Values may be templates.",
  });

export const OutputSchema = z.strictObject({
  value: z.string().meta({ description: "The output's value; usually a template." }),
  format: z
    .enum(["json", "yaml", "text"])
    .optional()
    .meta({ description: "How to parse the value (default text)." }),
});

export const MountSchema = z.strictObject({
  path: z
    .string()
    .meta({ description: "A file or directory, relative to the spec's directory and inside it." }),
  mountpoint: z.string().meta({ description: "Where it appears inside the container." }),
});

/** The `codingAgent.type` of a step that runs a Deckhand provider over ACP (an extension). */
export const ACP_AGENT_TYPE = "acp";

export const CodingAgentSchema = z
  .strictObject({
    type: z.string().meta({
      description:
        "The agent: codex, claude-code, opencode or gemini, installed and run as a CLI in the step's image; or acp, a Deckhand provider run over ACP in the workspace (a Deckhand extension).",
    }),
    prompt: z.string().meta({ description: "What the agent should do; may be a template." }),
    provider: z.string().optional().meta({
      description:
        "With type acp: the Deckhand provider to run, a built-in ACP agent (codex, claude, gemini, opencode, goose, qwen) or a custom one of providers.json. A Deckhand extension.",
    }),
    permissions: AcpStepPermissionsSchema.optional().meta({
      description:
        "With type acp: how the agent's permission requests are answered, with no person in the loop. allow-edits (default) allows reading and changing files and refuses commands, fetches and anything else; allow-all allows every request; deny refuses every one. A Deckhand extension.",
    }),
    budget: SpendLimitSchema.optional().meta({
      description:
        "The most this step's agent may spend on models in each workspace: tokens and/or cost. A workspace's budget is the sum of its codingAgent steps' budgets (a run's coding_agent.workspace_budget overrides it); the model proxy refuses its requests once it is reached. A Deckhand extension.",
    }),
  })
  .meta({ description: "Runs a coding agent on a prompt instead of a shell command (version 3)." });

const stepShape = {
  run: z.string().optional().meta({ description: "The shell command or script to run." }),
  container: z
    .string()
    .optional()
    .meta({ description: "The container image the step runs in (versions 1 and 2)." }),
  image: z.string().optional().meta({
    description: "The container image the step runs in (version 3 spelling of container).",
  }),
  codingAgent: CodingAgentSchema.optional(),
  env: EnvSchema.optional(),
  files: z
    .record(z.string(), z.string())
    .optional()
    .meta({ description: "Files to create in the container: path to content (a template)." }),
  outputs: z
    .record(z.string(), OutputSchema)
    .optional()
    .meta({ description: "Values later steps and the changeset template read as outputs.<name>." }),
  mount: z
    .array(MountSchema)
    .optional()
    .meta({ description: "Files from the spec's directory mounted into the container." }),
  if: z
    .union([z.boolean(), z.string()])
    .optional()
    .meta({ description: 'Run the step only when this is true or renders to "true".' }),
};

export const StepSchema = z.strictObject(stepShape).meta({ description: "One step." });

export const HookStepSchema = z
  .strictObject({
    ...stepShape,
    maxAttempts: z
      .int()
      .min(1)
      .optional()
      .meta({ description: "How many times the hook may run for one changeset (at least 1)." }),
  })
  .meta({ description: "A step run by a changeset hook." });

const hookSchema = z.strictObject({ steps: z.array(HookStepSchema) });

export const ChangesetHooksSchema = z
  .strictObject({
    onCIFailure: hookSchema
      .optional()
      .meta({ description: "Steps to run when a changeset's CI fails." }),
    onMergeConflict: hookSchema
      .optional()
      .meta({ description: "Steps to run when a changeset has a merge conflict." }),
  })
  .meta({ description: "Steps run on events of published changesets (version 3)." });

export const TransformChangesSchema = z.strictObject({
  group: z
    .array(
      z.strictObject({
        directory: z
          .string()
          .min(1)
          .meta({ description: "Changes under this directory go to their own changeset." }),
        branch: z.string().min(1).meta({ description: "The branch of that changeset." }),
        repository: z
          .string()
          .optional()
          .meta({ description: "Apply this group in this repository only." }),
      }),
    )
    .optional(),
});

export const ImportChangesetSchema = z.strictObject({
  repository: z.string().meta({ description: "The repository the changesets are in." }),
  externalIDs: z
    .array(z.union([z.string(), z.int()]))
    .meta({ description: "Pull request numbers (or ids) to import." }),
});

export const ChangesetTemplateSchema = z
  .strictObject({
    title: z.string().meta({ description: "The changeset's title (a template)." }),
    body: z.string().optional().meta({ description: "The changeset's description (a template)." }),
    branch: z.string().meta({ description: "The branch to push the changes to (a template)." }),
    fork: z.boolean().optional().meta({ description: "Push to a fork instead of the repository." }),
    commit: z.strictObject({
      message: z.string().meta({ description: "The commit message (a template)." }),
      author: z
        .strictObject({
          name: z.string(),
          email: z.string(),
        })
        .optional(),
    }),
    published: PublishedSchema.optional(),
  })
  .meta({ description: "How each workspace's changes become a changeset." });

export const BatchSpecSchema = z
  .strictObject({
    $schema: z
      .string()
      .optional()
      .meta({ description: "The JSON Schema this file follows, for editors. Ignored otherwise." }),
    version: z
      .literal([1, 2, 3])
      .optional()
      .meta({ description: "The spec format version (default 1). codingAgent steps need 3." }),
    name: z
      .string()
      .regex(/^[\w.-]+$/)
      .meta({ description: "The batch change's name: letters, digits, _, . and -." }),
    description: z.string().optional().meta({ description: "What the batch change does." }),
    on: z.array(OnEntrySchema).optional(),
    workspaces: z.array(WorkspaceConfigurationSchema).optional(),
    steps: z.array(StepSchema).optional(),
    transformChanges: TransformChangesSchema.optional(),
    importChangesets: z.array(ImportChangesetSchema).optional(),
    changesetTemplate: ChangesetTemplateSchema.optional(),
    changesetHooks: ChangesetHooksSchema.optional(),
    rollout: RolloutSettingsSchema.optional(),
  })
  .meta({
    title: "Deckhand batch spec",
    description:
      "A batch change: which repositories, which steps to run in each, and the changesets to create. Compatible with Sourcegraph batch specs, versions 1 to 3.",
  });

/** A spec as written, after structural validation. */
export type BatchSpecInput = z.infer<typeof BatchSpecSchema>;
export type PublishedInput = z.infer<typeof PublishedSchema>;
export type StepInput = z.infer<typeof StepSchema>;
export type HookStepInput = z.infer<typeof HookStepSchema>;
export type EnvInput = z.infer<typeof EnvSchema>;
export type OnEntry = z.infer<typeof OnEntrySchema>;
export type WorkspaceConfiguration = z.infer<typeof WorkspaceConfigurationSchema>;
export type Output = z.infer<typeof OutputSchema>;
export type Mount = z.infer<typeof MountSchema>;
export type CodingAgent = z.infer<typeof CodingAgentSchema>;
export type ChangesetTemplate = z.infer<typeof ChangesetTemplateSchema>;
export type ChangesetHooks = z.infer<typeof ChangesetHooksSchema>;
export type ImportChangeset = z.infer<typeof ImportChangesetSchema>;
export type TransformChanges = z.infer<typeof TransformChangesSchema>;

/** A step in canonical form: `image` is folded into `container`. */
export type Step = Omit<StepInput, "image">;
export type HookStep = Omit<HookStepInput, "image">;

/**
 * A validated spec in canonical form: `version` is set (default 1), every step's image is in
 * `container` whichever spelling the file used, and `$schema` is dropped.
 */
export interface BatchSpec
  extends Omit<BatchSpecInput, "version" | "steps" | "changesetHooks" | "$schema"> {
  version: 1 | 2 | 3;
  steps?: Step[];
  changesetHooks?: {
    onCIFailure?: { steps: HookStep[] };
    onMergeConflict?: { steps: HookStep[] };
  };
}
