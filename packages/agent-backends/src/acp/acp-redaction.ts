import { looksLikeSecretName, redactSecrets, redactValue } from "@deckhand/secrets";
import type { AgentSessionContext } from "../backend.ts";
import type { AcpLaunch } from "./agent-process.ts";

export type AcpLogFields = Record<string, unknown>;

/** Where the backend reports what the caller does not see in events. Messages are redacted. */
export interface AcpBackendLogger {
  info(message: string, fields?: AcpLogFields): void;
  warn(message: string, fields?: AcpLogFields): void;
  error(message: string, fields?: AcpLogFields): void;
}

export const silentLogger: AcpBackendLogger = { info() {}, warn() {}, error() {} };

/**
 * The values an ACP agent's words must never carry out: the caller's secrets, the model-proxy
 * token, whatever the launch sets in a variable named like a secret, and the workspace agent's
 * token. Everything the agent says passes through here before an event, a log line or an error.
 */
export class AcpRedaction {
  readonly #secrets: readonly (string | null)[];

  constructor(context: AgentSessionContext, launch: AcpLaunch, secrets: readonly string[] = []) {
    this.#secrets = [
      ...secrets,
      ...(context.modelProxy ? [context.modelProxy.token] : []),
      ...Object.entries(launch.env)
        .filter(([name]) => looksLikeSecretName(name))
        .map(([, value]) => value),
      context.workspaceAgent.token,
    ];
  }

  text(text: string): string {
    return redactSecrets(text, this.#secrets);
  }

  /** Every string inside `value` redacted (an event, a log line's fields). */
  value<Value>(value: Value): Value {
    return redactValue(value, this.#secrets);
  }

  /** `logger` with its messages redacted. */
  logger(logger: AcpBackendLogger): AcpBackendLogger {
    return {
      info: (message, fields) => logger.info(this.text(message), fields),
      warn: (message, fields) => logger.warn(this.text(message), fields),
      error: (message, fields) => logger.error(this.text(message), fields),
    };
  }
}
