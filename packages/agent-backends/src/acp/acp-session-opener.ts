import * as acp from "@agentclientprotocol/sdk";
import { errorMessage } from "@deckhand/errors";
import type { AcpAgentConnection, OpenedSession } from "./acp-agent-connection.ts";
import type { AcpEventRouter } from "./acp-event-router.ts";
import type { AcpBackendLogger, AcpRedaction } from "./acp-redaction.ts";

/** How to log an agent in: a method to `authenticate` with, or why none can be used. */
export type AcpLoginChoice =
  | { kind: "authenticate"; methodId: string; name: string }
  | { kind: "refuse"; message: string };

/** ACP's code for "log in first". */
const AUTH_REQUIRED = acp.RequestError.authRequired().code;

/** A JSON-RPC error's code and data, for a log line; nothing for other errors. */
function requestErrorFields(error: unknown): { code?: number; data?: unknown } {
  if (!(error instanceof acp.RequestError)) return {};
  return { code: error.code, ...(error.data === undefined ? {} : { data: error.data }) };
}

export interface AcpSessionOpenerOptions {
  agent: string;
  worktreePath: string;
  logger: AcpBackendLogger;
  redaction: AcpRedaction;
  /** Keeps a loaded session's replay off the turn's stream, and hears of its mode. */
  events: AcpEventRouter;
  /** Chooses a login when `session/new` is refused for want of one (see AcpBackendOptions). */
  login: ((methods: readonly acp.AuthMethod[], refusal: string) => AcpLoginChoice) | undefined;
}

/**
 * Opens the agent's session: resumes the earlier one when the agent can (`session/resume`,
 * else `session/load` with its replay kept off the stream), else starts a new one, logging the
 * agent in first when it asks and `login` can.
 */
export class AcpSessionOpener {
  readonly #options: AcpSessionOpenerOptions;

  constructor(options: AcpSessionOpenerOptions) {
    this.#options = options;
  }

  /** The opened session's id, now `current`'s session; its mode, if any, is emitted. */
  async open(current: AcpAgentConnection, resumeSessionId: string | null): Promise<string> {
    const resumed = resumeSessionId === null ? null : await this.#resume(current, resumeSessionId);
    const opened = resumed ?? (await this.#newSession(current));
    current.adopt(opened.sessionId, resumed !== null, opened);
    const modes = opened.modes;
    if (modes) {
      this.#options.events.emit({
        type: "mode",
        agent: this.#options.agent,
        mode_id: modes.currentModeId,
      });
    }
    return opened.sessionId;
  }

  /**
   * Resumes `sessionId` if the agent can: the session, with the modes the agent answered; null
   * when it cannot or refuses. `open` emits the mode, whichever way the session opened.
   */
  async #resume(
    current: AcpAgentConnection,
    sessionId: string,
  ): Promise<({ sessionId: string } & OpenedSession) | null> {
    const { agent, events, logger, redaction } = this.#options;
    const request = { sessionId, cwd: this.#options.worktreePath, mcpServers: [] };
    try {
      // Preferred over load: nothing is replayed, so nothing has to be kept off the stream.
      if (current.capabilities.sessionCapabilities?.resume) {
        const resumed: acp.ResumeSessionResponse = await current.bounded(
          "session/resume",
          current.agent.request(acp.methods.agent.session.resume, request),
        );
        return { sessionId, modes: resumed.modes, configOptions: resumed.configOptions };
      }
      if (current.capabilities.loadSession) {
        events.loadingSessionId = sessionId;
        try {
          const loaded: acp.LoadSessionResponse = await current.bounded(
            "session/load",
            current.agent.request(acp.methods.agent.session.load, request),
          );
          // Replayed notifications read before the answer are still on their way in, and
          // the mode event goes out after them.
          await new Promise((resolve) => setImmediate(resolve));
          return { sessionId, modes: loaded.modes, configOptions: loaded.configOptions };
        } finally {
          events.loadingSessionId = null;
        }
      }
    } catch (error) {
      if (current.process.exit() !== null) throw error;
      // The agent's JSON-RPC error whole (its code and data say why, e.g. which session it
      // does not know), redacted like everything else the agent says.
      logger.warn("the agent could not resume its session; starting a new one", {
        agent,
        method: current.capabilities.sessionCapabilities?.resume
          ? "session/resume"
          : "session/load",
        error: redaction.text(errorMessage(error)),
        ...redaction.value(requestErrorFields(error)),
      });
    }
    return null;
  }

  /**
   * `session/new`; refused for want of a login, the agent is logged in with a method `login`
   * chooses (one its environment already serves) and asked once more.
   */
  async #newSession(current: AcpAgentConnection): Promise<acp.NewSessionResponse> {
    const { agent, logger } = this.#options;
    const request = () =>
      current.bounded(
        "session/new",
        current.agent.request(acp.methods.agent.session.new, {
          cwd: this.#options.worktreePath,
          mcpServers: [],
        }),
      );
    try {
      return await request();
    } catch (error) {
      if (!(error instanceof acp.RequestError) || error.code !== AUTH_REQUIRED) throw error;
      const methods = current.authMethods;
      const choice: AcpLoginChoice = this.#options.login?.(methods, error.message) ?? {
        kind: "refuse",
        message: `the agent needs a login before it can open a session${methods.length > 0 ? ` (it offers: ${methods.map((method) => method.name).join(", ")})` : ""}: ${error.message}`,
      };
      if (choice.kind === "refuse") throw new Error(choice.message);
      logger.info("the agent needs a login; logging it in", { agent, method: choice.methodId });
      await current.bounded(
        `authenticate (${choice.name})`,
        current.agent.request(acp.methods.agent.authenticate, { methodId: choice.methodId }),
      );
      return await request();
    }
  }
}
