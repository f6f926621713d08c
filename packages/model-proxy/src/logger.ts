import { describeError, redactSecrets, redactValue } from "@deckhand/secrets";

export type LogFields = Record<string, unknown>;

/** Where the proxy writes what it did. Every message and field is redacted before it arrives. */
export interface ModelProxyLogger {
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
}

/** Writes nothing; the default. */
export const silentLogger: ModelProxyLogger = {
  info() {},
  warn() {},
  error() {},
};

/**
 * Wraps a logger so nothing reaches it unredacted: the known secrets and anything shaped like
 * a scoped token are replaced, and errors are flattened to their (redacted) messages.
 */
export function redactingLogger(
  logger: ModelProxyLogger,
  secrets: () => readonly string[],
): ModelProxyLogger {
  const write =
    (level: keyof ModelProxyLogger) =>
    (message: string, fields?: LogFields): void => {
      const known = secrets();
      const clean = fields === undefined ? undefined : (redactValue(fields, known) as LogFields);
      logger[level](redactSecrets(message, known), clean);
    };
  return { info: write("info"), warn: write("warn"), error: write("error") };
}

export { describeError };
