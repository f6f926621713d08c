import { DeckhandError } from "@deckhand/wire";

/** Stable codes of ProvidersError; the router maps each to an HTTP status. */
export type ProvidersErrorCode =
  /** No provider with that id (built-in or in the config file). */
  | "unknown_provider"
  /** No project with that id, or this service cannot look projects up. */
  | "unknown_project"
  /** The provider is turned off in the config file. */
  | "provider_disabled"
  /** Its command cannot be found. */
  | "provider_not_installed"
  /** The native agent has no model upstream, or the provider's config is broken. */
  | "provider_unavailable"
  /** `If-Match` named a config version that is no longer current. */
  | "stale_config"
  /** A patch is not a JSON object, or would leave the config with new problems. */
  | "invalid_patch"
  /** The config file exists but is not JSON, so a patch cannot be applied to it safely. */
  | "unreadable_config"
  /** Writing the config file failed (permissions, disk full, ...). */
  | "config_write_failed";

/**
 * The one error type of this package. `code` is stable for callers to branch on; the message
 * names the provider or file involved and what to do next.
 */
export class ProvidersError extends DeckhandError<ProvidersErrorCode> {
  static override readonly errorName = "ProvidersError";
}
