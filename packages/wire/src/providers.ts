import { z } from "zod";
import { SandboxStatusSchema } from "./sandbox.ts";

/**
 * Providers API contracts (`/api/providers/...`): the snapshot of every agent a user can pick,
 * the providers config file and its diagnostics. JSON field names are snake_case; the config
 * file keeps the user's own spelling (`extends`, `label`, `command`, `env`, `enabled`).
 */

/** A provider id: a lower-case path segment, because it also names routes and directories. */
export const ProviderIdSchema = z
  .string()
  .regex(
    /^[a-z0-9][a-z0-9._-]{0,62}$/,
    'must be lower-case letters, digits, ".", "_" or "-", starting with a letter or digit',
  );
export type ProviderId = z.infer<typeof ProviderIdSchema>;

/** `native` is Deckhand's own agent loop; `acp` an external command speaking ACP over stdio. */
export const ProviderTransportSchema = z.enum(["native", "acp"]);
export type ProviderTransport = z.infer<typeof ProviderTransportSchema>;

export const ProviderStatusSchema = z.enum([
  /** Installed, enabled, and its last probe succeeded (or it needs none). */
  "ready",
  /** Turned off in the config file. */
  "disabled",
  /** Its command is on neither PATH nor the project's node_modules/.bin. */
  "not_installed",
  /** It is there but unusable: the probe failed, or the config for it is broken. */
  "error",
  /** A forced refresh of this provider is running; the other fields hold the previous result. */
  "loading",
  /**
   * Its probe is still waiting for the agent to answer `initialize` or `session/new` (a first
   * start can take a while); the other fields hold the previous result, if any. Ask again
   * shortly: the probe goes on, bounded by the provider's start timeouts.
   */
  "starting",
]);
export type ProviderStatus = z.infer<typeof ProviderStatusSchema>;

/** A model or a mode the agent offers. */
export const ProviderOptionSchema = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string().nullable(),
});
export type ProviderOption = z.infer<typeof ProviderOptionSchema>;

/** A slash command; `skill` when the agent marks it as one (`_meta.kind: "skill"`). */
export const ProviderCommandSchema = z.object({
  name: z.string(),
  description: z.string(),
  kind: z.enum(["command", "skill"]),
  /** What to type after the command, when it takes input. */
  input_hint: z.string().nullable(),
});
export type ProviderCommand = z.infer<typeof ProviderCommandSchema>;

/** One problem with the providers config file; it never stops the server. */
export const ProvidersDiagnosticSchema = z.object({
  /** The config file's path. */
  file: z.string(),
  /** JSON path of the offending field, e.g. `providers.codex.enabled`; empty for the whole file. */
  field: z.string(),
  message: z.string(),
});
export type ProvidersDiagnostic = z.infer<typeof ProvidersDiagnosticSchema>;

export const ProviderEntrySchema = z.object({
  id: ProviderIdSchema,
  label: z.string(),
  transport: ProviderTransportSchema,
  builtin: z.boolean(),
  enabled: z.boolean(),
  status: ProviderStatusSchema,
  /** The command and its arguments as configured; null for the native agent. */
  command: z.array(z.string()).nullable(),
  /** Where the executable was found; null when it was not (or for the native agent). */
  resolved_path: z.string().nullable(),
  /** What to do when it is not installed, e.g. an `npm install -g` line. */
  install_hint: z.string().nullable(),
  /** Agent name and version as reported by `initialize`, when probed. */
  version: z.string().nullable(),
  models: z.array(ProviderOptionSchema),
  current_model: z.string().nullable(),
  modes: z.array(ProviderOptionSchema),
  current_mode: z.string().nullable(),
  commands: z.array(ProviderCommandSchema),
  /** Why the status is `error` (or `not_installed`), in words a user can act on. */
  last_error: z.string().nullable(),
  /** When the cached probe result was taken (ISO 8601); null when never probed. */
  probed_at: z.string().nullable(),
});
export type ProviderEntry = z.infer<typeof ProviderEntrySchema>;

/**
 * `GET /api/providers/snapshot?project_id=`: with a project, commands are also looked up in its
 * `node_modules/.bin` and relative commands resolve against its checkout.
 */
export const ProvidersSnapshotQuerySchema = z.strictObject({ project_id: z.uuid().optional() });
export type ProvidersSnapshotQuery = z.infer<typeof ProvidersSnapshotQuerySchema>;

/** `GET /api/providers/snapshot` and `POST /api/providers/refresh`. */
export const ProvidersSnapshotSchema = z.object({
  providers: z.array(ProviderEntrySchema),
  diagnostics: z.array(ProvidersDiagnosticSchema),
  /** How the agents are confined on this server. */
  sandbox: SandboxStatusSchema,
});
export type ProvidersSnapshot = z.infer<typeof ProvidersSnapshotSchema>;

/** One provider's entry in the config file. Every field is optional; unknown ones are kept. */
export const ProviderConfigEntrySchema = z.looseObject({
  /** Set to `"acp"` to define a custom provider; built-ins need no `extends`. */
  extends: z.literal("acp").optional(),
  label: z.string().min(1).optional(),
  enabled: z.boolean().optional(),
  /** The executable and its arguments; replaces a built-in's command. */
  command: z.array(z.string().min(1)).min(1).optional(),
  /** Extra environment for the agent process. */
  env: z.record(z.string(), z.string()).optional(),
  /**
   * The arguments that make the command's executable print its version, given instead of the
   * command's own arguments (`[]`: it has none); the diagnostic runs them.
   */
  versionArgs: z.array(z.string().min(1)).optional(),
  /**
   * Where the agent keeps its state, relative to the home directory (`.my-agent`) or absolute:
   * writable in its sandbox, where the rest of the home is read-only. Replaces a built-in's list.
   */
  stateDirectories: z
    .array(
      z
        .string()
        .min(1)
        .refine(
          (path) => !path.split("/").includes(".."),
          "must be a path inside the home directory (such as .my-agent or .config/my-agent) or an absolute path, without ..",
        ),
    )
    .optional(),
});
export type ProviderConfigEntry = z.infer<typeof ProviderConfigEntrySchema>;

/** The providers config file (`<data-dir>/providers.json`). Unknown fields are kept. */
export const ProvidersConfigDocumentSchema = z.looseObject({
  providers: z.record(z.string(), ProviderConfigEntrySchema).optional(),
});
export type ProvidersConfigDocument = z.infer<typeof ProvidersConfigDocumentSchema>;

/** `GET` and `PATCH /api/providers/config`; the ETag is also sent as the `ETag` header. */
export const ProvidersConfigResponseSchema = z.object({
  /** The file as it is on disk (an empty object when it does not exist or is not JSON). */
  config: z.record(z.string(), z.unknown()),
  etag: z.string(),
  diagnostics: z.array(ProvidersDiagnosticSchema),
});
export type ProvidersConfigResponse = z.infer<typeof ProvidersConfigResponseSchema>;

/** `PATCH /api/providers/config`: a JSON merge patch (RFC 7396) of the config document. */
export const ProvidersConfigPatchSchema = z.record(z.string(), z.unknown());
export type ProvidersConfigPatch = z.infer<typeof ProvidersConfigPatchSchema>;

/** `POST /api/providers/refresh`: probe `ids` (all when omitted); `force` ignores the cache. */
export const ProvidersRefreshRequestSchema = z.strictObject({
  ids: z.array(ProviderIdSchema).optional(),
  force: z.boolean().optional(),
});
export type ProvidersRefreshRequest = z.infer<typeof ProvidersRefreshRequestSchema>;
