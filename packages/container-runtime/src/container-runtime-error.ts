import { DeckhandError } from "@deckhand/wire";

export type ContainerRuntimeErrorCode =
  /** No candidate CLI answered `info`; the message lists why each one is not a runtime. */
  | "no_runtime"
  /** A caller-supplied value (mount, env name, timeout, user) that cannot be passed safely. */
  | "invalid_options"
  /** The image is not present locally and could not be pulled (or pulling was not allowed). */
  | "image_unavailable"
  /** The CLI itself failed: could not be started, or answered a run with Docker's exit 125. */
  | "runtime_failed"
  /** A step run as another user left files the host user could not be given back. */
  | "ownership_restore_failed";

/**
 * The one error type this package throws. `isInstance` recognises instances from another copy
 * of the package (a second install, another realm), where `instanceof` would not.
 */
export class ContainerRuntimeError extends DeckhandError<ContainerRuntimeErrorCode> {
  static override readonly errorName = "ContainerRuntimeError";
}
