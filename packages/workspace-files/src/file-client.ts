import {
  type DeleteFileRequest,
  type DeleteFileResponse,
  DeleteFileResponseSchema,
  type EditFilesRequest,
  type EditFilesResponse,
  EditFilesResponseSchema,
  type ErrorCode,
  ErrorResponseSchema,
  type ReadFileRequest,
  type ReadFileResponse,
  ReadFileResponseSchema,
  WireHeader,
  WirePath,
  type WriteFileRequest,
  type WriteFileResponse,
  WriteFileResponseSchema,
} from "@deckhand/wire";
import type { z } from "zod";
import { WorkspaceFilesError } from "./workspace-files-error.ts";

export interface FileClientOptions {
  /** The workspace agent, e.g. `http://127.0.0.1:7421`; the file API path is appended. */
  baseUrl: string;
  /** Sent as a bearer token when set. */
  token?: string;
  /** Replaces the global `fetch`. */
  fetch?: typeof fetch;
  /**
   * The `root` of every request that names none: a directory inside the agent's root (such as a
   * session worktree) the client's requests are confined to, symlinks resolved. Set once here,
   * no request can forget it.
   */
  root?: string;
}

/**
 * A failed file API call: `status` and `code` come from the agent's answer (status 0 when the
 * agent could not be reached or answered something that is not the file API).
 */
export class FileClientError extends WorkspaceFilesError {
  static override readonly errorName: string = "FileClientError";
  readonly status: number;

  constructor(status: number, code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
    this.status = status;
  }
}

/** Typed client of the workspace agent's file API. */
export class FileClient {
  readonly #baseUrl: string;
  readonly #token: string | undefined;
  readonly #fetch: typeof fetch;
  readonly #root: string | undefined;

  constructor(options: FileClientOptions) {
    this.#baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.#token = options.token;
    this.#fetch = options.fetch ?? fetch;
    this.#root = options.root;
  }

  read(request: ReadFileRequest): Promise<ReadFileResponse> {
    return this.#post("read", request, ReadFileResponseSchema);
  }

  write(request: WriteFileRequest): Promise<WriteFileResponse> {
    return this.#post("write", request, WriteFileResponseSchema);
  }

  edit(request: EditFilesRequest): Promise<EditFilesResponse> {
    return this.#post("edit", request, EditFilesResponseSchema);
  }

  /** Removes a file (a symlink itself, not its target); a missing one answers `deleted: false`. */
  delete(request: DeleteFileRequest): Promise<DeleteFileResponse> {
    return this.#post("delete", request, DeleteFileResponseSchema);
  }

  async #post<Schema extends z.ZodType>(
    route: string,
    request: { root?: string },
    schema: Schema,
  ): Promise<z.output<Schema>> {
    const url = `${this.#baseUrl}${WirePath.files}/${route}`;
    const body =
      request.root === undefined && this.#root !== undefined
        ? { ...request, root: this.#root }
        : request;
    const headers: Record<string, string> = { "Content-Type": "application/json" };
    if (this.#token !== undefined) headers[WireHeader.authorization] = `Bearer ${this.#token}`;
    let response: Response;
    try {
      response = await this.#fetch(url, { method: "POST", headers, body: JSON.stringify(body) });
    } catch (error) {
      throw new FileClientError(
        0,
        "internal",
        `cannot reach the workspace agent at ${url} (${(error as Error).message}); check that it is running and the address is right`,
        { cause: error },
      );
    }
    const text = await response.text();
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    if (!response.ok) {
      const parsed = ErrorResponseSchema.safeParse(json);
      if (parsed.success) {
        throw new FileClientError(
          response.status,
          parsed.data.error.code,
          parsed.data.error.message,
        );
      }
      throw new FileClientError(
        response.status,
        "internal",
        `${url} answered HTTP ${response.status} without a Deckhand error body (${text.slice(0, 200)}); is this a workspace agent?`,
      );
    }
    const parsed = schema.safeParse(json);
    if (!parsed.success) {
      throw new FileClientError(
        0,
        "internal",
        `${url} answered HTTP ${response.status} with a body that is not a file API response; are the agent and client versions compatible?`,
        { cause: parsed.error },
      );
    }
    return parsed.data;
  }
}
