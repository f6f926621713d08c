import { DeckhandError } from "@deckhand/wire";

export type SandboxErrorCode =
  /** `sandbox: "bubblewrap"` was asked for and bubblewrap does not work on this machine. */
  | "unavailable"
  /** A sandboxed process's network could not be set up (slirp4netns failed); it was stopped. */
  | "network_failed"
  /** A launch request that cannot be confined as asked (a writable path that is missing). */
  | "invalid_request";

/** The one error type this package throws. */
export class SandboxError extends DeckhandError<SandboxErrorCode> {
  static override readonly errorName = "SandboxError";
}
