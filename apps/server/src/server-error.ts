import { DeckhandError } from "@deckhand/wire";

export type ServerErrorCode =
  | "invalid_config"
  | "listen_failed"
  | "data_dir_locked"
  | "start_failed";

/** Errors the server raises itself (configuration, start-up). HTTP errors use HttpError. */
export class ServerError extends DeckhandError<ServerErrorCode> {
  static override readonly errorName = "ServerError";
}
