/** A line this long without a newline is not an ACP message anyone should wait for. */
const MAX_PENDING_LINE_BYTES = 8 * 1024 * 1024;

function quote(text: string, limit = 200): string {
  return JSON.stringify(text.length > limit ? `${text.slice(0, limit)}...` : text);
}

/**
 * Watches an agent's stdout as it passes to the ACP SDK: anything that is not a JSON object on
 * its own line breaks ACP framing and is reported to `onProblem`, and the raw `session/new`
 * result is kept, since it carries fields the SDK's parser drops.
 */
export class AcpStdoutWatch {
  readonly stream: TransformStream<Uint8Array, Uint8Array>;
  /** The last result that named a session, as the agent wrote it. */
  rawSession: Record<string, unknown> | undefined;
  readonly #onProblem: (message: string) => void;
  readonly #decoder = new TextDecoder();
  #pending = "";

  constructor(onProblem: (message: string) => void) {
    this.#onProblem = onProblem;
    this.stream = new TransformStream<Uint8Array, Uint8Array>({
      transform: (chunk, controller) => {
        this.#pending += this.#decoder.decode(chunk, { stream: true });
        const lines = this.#pending.split("\n");
        this.#pending = lines.pop() ?? "";
        for (const line of lines) this.#inspectLine(line);
        if (this.#pending.length > MAX_PENDING_LINE_BYTES) {
          this.#onProblem("the agent wrote more than 8 MiB to stdout without a newline");
        }
        controller.enqueue(chunk);
      },
      flush: () => {
        this.#inspectLine(this.#pending);
      },
    });
  }

  #inspectLine(line: string): void {
    const trimmed = line.trim();
    if (trimmed === "") return;
    let message: unknown;
    try {
      message = JSON.parse(trimmed);
    } catch {
      this.#onProblem(
        `the agent wrote something that is not ACP JSON to stdout: ${quote(trimmed)}`,
      );
      return;
    }
    if (typeof message !== "object" || message === null || Array.isArray(message)) {
      this.#onProblem(
        `the agent wrote something that is not an ACP message to stdout: ${quote(trimmed)}`,
      );
      return;
    }
    const result = (message as { result?: unknown }).result;
    if (
      typeof result === "object" &&
      result !== null &&
      typeof (result as { sessionId?: unknown }).sessionId === "string"
    ) {
      this.rawSession = result as Record<string, unknown>;
    }
  }
}
