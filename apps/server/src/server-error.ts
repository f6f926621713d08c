/** Errors the server raises itself (configuration, start-up). HTTP errors use HttpError. */
export class ServerError extends Error {
  readonly code: "invalid_config" | "listen_failed" | "data_dir_locked" | "start_failed";

  constructor(code: ServerError["code"], message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "ServerError";
    this.code = code;
  }
}
