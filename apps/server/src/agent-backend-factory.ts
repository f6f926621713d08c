import { createAcpBackend, createNativeBackend } from "@deckhand/agent-backends";
import type { BackendRequest } from "./agent-turns.ts";

/** The model the native agent asks for unless the server's config names another. */
export const DEFAULT_NATIVE_MODEL = "gpt-5.1-codex";

/**
 * The default backend factory: an ACP agent process for `acp` providers, Deckhand's native
 * agent for the `native` one.
 */
export function createAgentBackend(request: BackendRequest) {
  const { provider, context, agent, logger } = request;
  if (provider.transport === "native") {
    return createNativeBackend({
      ...context,
      model: request.nativeModel ?? DEFAULT_NATIVE_MODEL,
      logger: {
        info: (message, fields) => logger.info(fields ?? {}, message),
        warn: (message, fields) => logger.warn(fields ?? {}, message),
      },
    });
  }
  return createAcpBackend({
    context,
    agent,
    launch: {
      executable: provider.executable!,
      args: provider.args,
      env: provider.env,
      unset: provider.unset,
    },
  });
}
