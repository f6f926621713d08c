import { HttpError, httpStatusOf, parseJsonBody } from "@deckhand/http-kit";
import {
  DeleteFileRequestSchema,
  EditFilesRequestSchema,
  ReadFileRequestSchema,
  WriteFileRequestSchema,
} from "@deckhand/wire";
import { Hono } from "hono";
import type { WorkspaceFiles } from "./workspace-files.ts";
import { WorkspaceFilesError } from "./workspace-files-error.ts";

/**
 * Errors are converted here rather than in an `onError` of this router: hono lets a mounted
 * router's error handler replace the parent's, which would hide unexpected errors from the
 * agent's logging.
 */
async function answering<Result>(work: () => Promise<Result>): Promise<Result> {
  try {
    return await work();
  } catch (error) {
    // A WorkspaceFilesError's code is a wire code already; the status map gives its status.
    if (WorkspaceFilesError.isInstance(error)) {
      throw new HttpError(httpStatusOf(error.code), error.code, error.message, { cause: error });
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
