// config.json's `agentStartTimeouts`, read by the server and by batch executors alike: seconds an
// ACP agent may take to answer `initialize` and to open its session, for every provider and per
// provider id, as the milliseconds the provider service takes.
import { ProviderIdSchema } from "@deckhand/wire";
import { z } from "zod";
import type { AgentStartTimeoutSettings } from "./start-timeouts.ts";

const StartSecondsSchema = z.number().positive().max(3_600);

const StartTimeoutsSchema = z.strictObject({
  initializeSeconds: StartSecondsSchema.optional(),
  sessionSeconds: StartSecondsSchema.optional(),
});

/**
 * `{"initializeSeconds": 90, "sessionSeconds": 90, "providers": {"opencode":
 * {"initializeSeconds": 180}}}`; what is not set takes the providers' defaults (90 s each).
 */
export const AgentStartTimeoutsFileSchema = StartTimeoutsSchema.extend({
  providers: z.record(ProviderIdSchema, StartTimeoutsSchema).optional(),
});
export type AgentStartTimeoutsFile = z.infer<typeof AgentStartTimeoutsFileSchema>;

function milliseconds(file: z.infer<typeof StartTimeoutsSchema> | undefined) {
  return {
    ...(file?.initializeSeconds === undefined
      ? {}
      : { initializeMs: file.initializeSeconds * 1_000 }),
    ...(file?.sessionSeconds === undefined ? {} : { sessionMs: file.sessionSeconds * 1_000 }),
  };
}

/** The file's seconds as the provider service's settings; what is not set is left out. */
export function agentStartTimeoutsFrom(
  file: AgentStartTimeoutsFile | undefined,
): AgentStartTimeoutSettings {
  return {
    ...milliseconds(file),
    providers: Object.fromEntries(
      Object.entries(file?.providers ?? {}).map(([id, own]) => [id, milliseconds(own)]),
    ),
  };
}
