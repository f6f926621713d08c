import { z } from "zod";

/** A path inside the workspace: relative to its root, or absolute and inside it. */
const WorkspacePath = z
  .string()
  .min(1, "path must not be empty")
  .refine((path) => !path.includes("\0"), "path must not contain NUL bytes");

export const ReadFileRequestSchema = z.strictObject({
  path: WorkspacePath,
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
