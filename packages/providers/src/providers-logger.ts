export type LogFields = Record<string, unknown>;

/** Where the provider service reports config problems, failed probes and stores. */
export interface ProvidersLogger {
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
}

export const silentLogger: ProvidersLogger = { info() {}, warn() {} };
