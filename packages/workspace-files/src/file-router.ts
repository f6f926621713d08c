import { HttpError, parseJsonBody } from "@deckhand/http-kit";
import {
  DeleteFileRequestSchema,
  EditFilesRequestSchema,
  type ErrorCode,
  ReadFileRequestSchema,
  WriteFileRequestSchema,
} from "@deckhand/wire";
import { Hono } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { WorkspaceFiles } from "./workspace-files.ts";
import { WorkspaceFilesError } from "./workspace-files-error.ts";

const STATUS_BY_CODE: Partial<Record<ErrorCode, ContentfulStatusCode>> = {
  invalid_json: 400,
  invalid_request: 400,
  path_outside_root: 403,
  file_not_found: 404,
  conflict: 409,
  not_a_file: 400,
  binary_file: 415,
  edit_failed: 422,
  internal: 500,
};

/** The HTTP status the file API answers a given error code with. */
export function fileErrorStatus(code: ErrorCode): ContentfulStatusCode {
  return STATUS_BY_CODE[code] ?? 500;
}

/**
 * Errors are converted here rather than in an `onError` of this router: hono lets a mounted
 * router's error handler replace the parent's, which would hide unexpected errors from the
 * agent's logging.
 */
async function answering<Result>(work: () => Promise<Result>): Promise<Result> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof WorkspaceFilesError) {
      throw new HttpError(fileErrorStatus(error.code), error.code, error.message, { cause: error });
    }
    throw error;
  }
}

/**
 * `POST /read`, `POST /write`, `POST /edit` and `POST /delete`, to be mounted at `WirePath.files` by an app
 * that installs http-kit's error handling, which turns errors into `{error: {code, message}}`.
 */
export function createFileRouter(files: WorkspaceFiles): Hono {
  const router = new Hono();
  router.post("/read", async (context) => {
    const request = await parseJsonBody(context, ReadFileRequestSchema);
    return context.json(await answering(() => files.read(request)));
  });
  router.post("/write", async (context) => {
    const request = await parseJsonBody(context, WriteFileRequestSchema);
    return context.json(await answering(() => files.write(request)));
  });
  router.post("/edit", async (context) => {
    const request = await parseJsonBody(context, EditFilesRequestSchema);
    return context.json(await answering(() => files.edit(request)));
  });
  router.post("/delete", async (context) => {
    const request = await parseJsonBody(context, DeleteFileRequestSchema);
    return context.json(await answering(() => files.delete(request)));
  });
  return router;
}
