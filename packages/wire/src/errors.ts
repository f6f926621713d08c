import { z } from "zod";

/** Stable error codes every Deckhand HTTP API answers with. */
export const ErrorCodeSchema = z.enum([
  "invalid_json",
  "invalid_request",
  "unauthorized",
  "not_found",
  "conflict",
  "too_many_processes",
  "rate_limited",
  "upstream_unavailable",
  /** A model spend budget (job, run, session or day) is reached; the message names which. */
  "budget_exceeded",
  "path_outside_root",
  "file_not_found",
  "not_a_file",
  "edit_failed",
  "binary_file",
  "body_too_large",
  "uri_too_long",
  "headers_too_large",
  /** The request's Host is not one of the server's names (a DNS-rebinding page, or a missing setting). */
  "host_not_allowed",
  /** A browser request from another origin (or `Origin: null`): another site's page, not the UI. */
  "origin_not_allowed",
  /** A body a route reads as JSON was not sent as JSON (`Content-Type: application/json`). */
  "unsupported_media_type",
  "internal",
]);
export type ErrorCode = z.infer<typeof ErrorCodeSchema>;

/** The body of every non-2xx answer: `{error: {code, message}}`. */
export const ErrorResponseSchema = z.object({
  error: z.object({
    code: ErrorCodeSchema,
    message: z.string(),
  }),
});
export type ErrorResponse = z.infer<typeof ErrorResponseSchema>;
