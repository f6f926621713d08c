import { ServerApiError } from "@deckhand/server-client";
import type { ProvidersConfigPatch, ProvidersConfigResponse } from "@deckhand/wire";
import { messageOf, server } from "../api.ts";

/** What a 412 means to a person: the file changed under them, and nothing was written. */
export const CHANGED_MEANWHILE =
  "Someone else changed providers.json since this page loaded it, so nothing was changed. " +
  "The current settings are shown now: check them and try again.";

/**
 * Sends a merge patch of providers.json, conditional on the version this page was drawn from:
 * a change made elsewhere since is refused (412) rather than overwritten.
 */
export function patchProvidersConfig(
  patch: ProvidersConfigPatch,
  etag: string | null,
): Promise<ProvidersConfigResponse> {
  return server.patchProvidersConfig(
    { body: patch },
    etag ? { headers: { "If-Match": etag } } : {},
  );
}

/** Whether a failed patch was refused because the file changed meanwhile. */
export function changedMeanwhile(failure: unknown): boolean {
  return ServerApiError.isInstance(failure) && failure.status === 412;
}

/** The message for a failed patch. */
export function patchFailureMessage(failure: unknown): string {
  return changedMeanwhile(failure) ? CHANGED_MEANWHILE : messageOf(failure);
}
