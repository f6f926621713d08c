import { z } from "zod";

/** A path inside the workspace: relative to its root, or absolute and inside it. */
const WorkspacePath = z
  .string()
  .min(1, "path must not be empty")
  .refine((path) => !path.includes("\0"), "path must not contain NUL bytes");

/**
 * Narrows the path guard for one request to a directory inside the agent's root (relative to
 * that root, or absolute and inside it), such as a session worktree. It is resolved, symlinks
 * included, like any path; the request's `path` is then relative to it and must stay inside its
 * real path. Without it the agent's root is the limit.
 */
const SubRoot = WorkspacePath.optional();

export const ReadFileRequestSchema = z.strictObject({
  path: WorkspacePath,
  root: SubRoot,
  /** First line to return, 1-based. */
  offset: z.number().int().min(1).optional(),
  /** Most lines to return. */
  limit: z.number().int().min(1).optional(),
  /** Most bytes of content to return; the server also applies its own cap. */
  max_bytes: z.number().int().min(1).optional(),
});
export type ReadFileRequest = z.infer<typeof ReadFileRequestSchema>;

export const ReadFileResponseSchema = z.object({
  /** Absolute path of the file that was read. */
  path: z.string(),
  content: z.string(),
  /** Size of the whole file in bytes. */
  size_bytes: z.number().int(),
  /** Lines in the whole file. */
  total_lines: z.number().int(),
  /** First line returned (1-based) and how many lines were returned. */
  offset: z.number().int(),
  lines: z.number().int(),
  /** True when the answer stops before the end of the file (line limit or byte cap). */
  truncated: z.boolean(),
  /** Line to pass as `offset` to continue, or null at the end of the file. */
  next_offset: z.number().int().nullable(),
});
export type ReadFileResponse = z.infer<typeof ReadFileResponseSchema>;

export const WriteFileRequestSchema = z.strictObject({
  path: WorkspacePath,
  root: SubRoot,
  content: z.string(),
});
export type WriteFileRequest = z.infer<typeof WriteFileRequestSchema>;

export const WriteFileResponseSchema = z.object({
  path: z.string(),
  bytes_written: z.number().int(),
  created: z.boolean(),
});
export type WriteFileResponse = z.infer<typeof WriteFileResponseSchema>;

export const FileEditSchema = z.strictObject({
  search: z.string().min(1, "search must not be empty"),
  replace: z.string(),
});
export type FileEdit = z.infer<typeof FileEditSchema>;

export const EditFilesRequestSchema = z.strictObject({
  /** Applies to every file of the request. */
  root: SubRoot,
  files: z
    .array(
      z.strictObject({
        path: WorkspacePath,
        edits: z.array(FileEditSchema).min(1, "edits must not be empty"),
      }),
    )
    .min(1, "files must not be empty"),
});
export type EditFilesRequest = z.infer<typeof EditFilesRequestSchema>;

export const EditFilesResponseSchema = z.object({
  files: z.array(
    z.object({
      path: z.string(),
      edits_applied: z.number().int(),
    }),
  ),
});
export type EditFilesResponse = z.infer<typeof EditFilesResponseSchema>;

export const DeleteFileRequestSchema = z.strictObject({
  path: WorkspacePath,
  root: SubRoot,
});
export type DeleteFileRequest = z.infer<typeof DeleteFileRequestSchema>;

export const DeleteFileResponseSchema = z.object({
  /** Absolute path of the entry (its directory's real path plus its name; a link is not followed). */
  path: z.string(),
  /** False when nothing was there: deleting a missing file is not an error. */
  deleted: z.boolean(),
});
export type DeleteFileResponse = z.infer<typeof DeleteFileResponseSchema>;
