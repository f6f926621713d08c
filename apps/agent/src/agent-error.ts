/** Errors the workspace agent raises itself (configuration, start-up). */
export class AgentError extends Error {
  readonly code: "invalid_config" | "listen_failed";

  constructor(code: AgentError["code"], message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "AgentError";
    this.code = code;
  }
}
