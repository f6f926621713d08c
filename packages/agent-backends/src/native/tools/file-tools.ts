import { z } from "zod";
import { AgentBackendError } from "../../errors.ts";
import { fromWorkspaceError, readWholeFile } from "../apply-patch/workspace-io.ts";
import { resolveWorktreePath, worktreeRelative } from "../safety/worktree-path.ts";
import { defineTool } from "./define-tool.ts";
import { MODEL_OUTPUT_MAX_BYTES } from "./model-output.ts";
import type { ToolContext } from "./tool-context.ts";

const PathArg = z
  .string()
  .min(1)
  .describe("File path relative to the worktree (an absolute path inside it also works).");

/**
 * A lexical check, for a clear message before any request. The context's file client names the
 * worktree as the `root` of every request, so the workspace agent resolves symlinks against the
 * worktree itself rather than only its own wider root.
 */
function worktreePath(context: ToolContext, path: string): string {
  return resolveWorktreePath(context.worktreeRoot, path, { allowAbsolute: true });
}

/** The most bytes of a file one read_file call asks for, leaving room for the result around it. */
const READ_FILE_PAGE_BYTES = 24 * 1024;

export const ReadFileArgsSchema = z.object({
  path: PathArg,
  offset: z.number().int().min(1).optional().describe("First line to read, 1-based (default 1)."),
  limit: z.number().int().min(1).optional().describe("Most lines to read (default: to the end)."),
});

export interface ReadFileResult {
  path: string;
  content: string;
  total_lines: number;
  offset: number;
  lines: number;
  truncated: boolean;
  next_offset: number | null;
  note: string | null;
}

export const readFileTool = defineTool({
  name: "read_file",
  description:
    "Read a text file in the worktree, optionally a window of lines (offset, limit). Large files come back in pages: pass next_offset as offset to continue.",
  schema: ReadFileArgsSchema,
  async execute(args, context): Promise<ReadFileResult> {
    const path = worktreePath(context, args.path);
    // A page is sized so its JSON fits what the model gets; text that escapes into more bytes
    // (quotes, newlines, control characters) is read again in a smaller page.
    let maxBytes = READ_FILE_PAGE_BYTES;
    for (;;) {
      let answer: Awaited<ReturnType<typeof context.files.read>>;
      try {
        answer = await context.files.read({
          path,
          max_bytes: maxBytes,
          ...(args.offset === undefined ? {} : { offset: args.offset }),
          ...(args.limit === undefined ? {} : { limit: args.limit }),
        });
      } catch (error) {
        throw fromWorkspaceError(error, `read ${args.path}`);
      }
      const result: ReadFileResult = {
        path: worktreeRelative(context.worktreeRoot, path),
        content: answer.content,
        total_lines: answer.total_lines,
        offset: answer.offset,
        lines: answer.lines,
        truncated: answer.truncated,
        next_offset: answer.next_offset,
        note:
          answer.next_offset === null
            ? null
            : `Lines ${answer.offset}-${answer.offset + answer.lines - 1} of ${answer.total_lines}; read on with offset ${answer.next_offset}.`,
      };
      const size = Buffer.byteLength(JSON.stringify(result), "utf8");
      if (size <= MODEL_OUTPUT_MAX_BYTES || maxBytes <= 1024) return result;
      maxBytes = Math.max(1024, Math.floor((maxBytes * (MODEL_OUTPUT_MAX_BYTES - 1024)) / size));
    }
  },
});

export const WriteFileArgsSchema = z.object({
  path: PathArg,
  content: z.string().describe("The whole new content of the file."),
});

export const writeFileTool = defineTool({
  name: "write_file",
  description:
    "Create a file, or replace a file's whole content, in the worktree. Missing directories are created. For changes to part of a file prefer edit_file or apply_patch.",
  schema: WriteFileArgsSchema,
  async execute(args, context): Promise<{ path: string; bytes_written: number; created: boolean }> {
    const path = worktreePath(context, args.path);
    try {
      const answer = await context.files.write({ path, content: args.content });
      return {
        path: worktreeRelative(context.worktreeRoot, path),
        bytes_written: answer.bytes_written,
        created: answer.created,
      };
    } catch (error) {
      throw fromWorkspaceError(error, `write ${args.path}`);
    }
  },
});

export const EditFileArgsSchema = z.object({
  path: PathArg,
  edits: z
    .array(
      z.object({
        old_string: z
          .string()
          .describe("Text to find, exactly as in the file (whitespace counts)."),
        new_string: z.string().describe("Text to put in its place."),
        replace_all: z
          .boolean()
          .optional()
          .describe("Replace every occurrence; otherwise old_string must occur exactly once."),
      }),
    )
    .min(1)
    .describe("Applied in order, each to the result of the previous ones; all or nothing."),
});

/** Non-overlapping occurrences of `search` in `text`. */
function occurrences(text: string, search: string): number {
  let count = 0;
  for (let index = text.indexOf(search); index !== -1; ) {
    count += 1;
    index = text.indexOf(search, index + search.length);
  }
  return count;
}

export const editFileTool = defineTool({
  name: "edit_file",
  description:
    "Change a file by search and replace: each edit replaces old_string (which must occur exactly once, unless replace_all) with new_string. Either every edit applies or the file is left unchanged.",
  schema: EditFileArgsSchema,
  async execute(
    args,
    context,
  ): Promise<{ path: string; edits_applied: number; replacements: number }> {
    const path = worktreePath(context, args.path);
    const file = await readWholeFile(context.files, path);
    if (file === null) {
      throw new AgentBackendError(
        "edit_failed",
        `${args.path} does not exist; create it with write_file`,
      );
    }
    let content = file.content;
    let replacements = 0;
    const failures: string[] = [];
    for (const [index, edit] of args.edits.entries()) {
      const label = `edits[${index}]`;
      if (edit.old_string.length === 0) {
        failures.push(`${label}: old_string is empty; give the text to replace`);
        continue;
      }
      if (edit.old_string === edit.new_string) {
        failures.push(`${label}: old_string and new_string are the same, so it changes nothing`);
        continue;
      }
      const count = occurrences(content, edit.old_string);
      if (count === 0) {
        failures.push(
          `${label}: old_string was not found; copy it exactly from the file (read it again; whitespace and indentation count), remembering that earlier edits apply first`,
        );
        continue;
      }
      if (count > 1 && edit.replace_all !== true) {
        failures.push(
          `${label}: old_string occurs ${count} times; add surrounding lines to make it unique, or set replace_all`,
        );
        continue;
      }
      content = content.split(edit.old_string).join(edit.new_string);
      replacements += count;
    }
    if (failures.length > 0) {
      throw new AgentBackendError(
        "edit_failed",
        `${args.path} was not changed: ${failures.join("; ")}`,
      );
    }
    if (context.signal.aborted) {
      throw new AgentBackendError("aborted", `the edit of ${args.path} was interrupted unapplied`);
    }
    try {
      await context.files.write({ path: file.realPath, content });
    } catch (error) {
      throw fromWorkspaceError(error, `write ${args.path}`);
    }
    return {
      path: worktreeRelative(context.worktreeRoot, path),
      edits_applied: args.edits.length,
      replacements,
    };
  },
});
