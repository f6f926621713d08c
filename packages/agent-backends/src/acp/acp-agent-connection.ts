import * as acp from "@agentclientprotocol/sdk";
import type { PromptInput } from "../backend.ts";
import { type AcpClientHandlers, connectAcpClient } from "./acp-client.ts";
import type { RoutedSession } from "./acp-event-router.ts";
import { type AgentProcess, describeExit } from "./agent-process.ts";

export interface AcpTimeouts {
  /** Bound on starting the agent: from spawn to its `initialize` answer. */
  initializeMs: number;
  /** Bound on opening its session: `session/new`, `load` or `resume`. */
  sessionMs: number;
  /** After `session/cancel`, how long the agent has to end the turn before it is stopped. */
  cancelMs: number;
  /** After SIGTERM, how long the agent has to exit before SIGKILL. */
  stopGraceMs: number;
}

/** As @deckhand/providers' defaults, which the server passes per provider. */
export const DEFAULT_ACP_TIMEOUTS: AcpTimeouts = {
  initializeMs: 90_000,
  sessionMs: 90_000,
  cancelMs: 5_000,
  stopGraceMs: 2_000,
};

/** What an agent answers `session/new`, `load` or `resume` with that settings depend on. */
export interface OpenedSession {
  modes?: acp.SessionModeState | null | undefined;
  configOptions?: acp.SessionConfigOption[] | null | undefined;
}

export interface AcpInitializeOptions {
  handlers: AcpClientHandlers;
  timeouts: AcpTimeouts;
  /** Whether `fs.readTextFile` is advertised. */
  serveFileReads: boolean;
  clientInfo: { name: string; version: string };
}

/**
 * Races `promise` against the agent dying and a time bound, for the start-up steps:
 * `initialize` has `initializeMs`, the session's opening `sessionMs`.
 */
async function bounded<T>(
  agentProcess: AgentProcess,
  timeouts: AcpTimeouts,
  step: string,
  promise: Promise<T>,
): Promise<T> {
  const limitMs = step === "initialize" ? timeouts.initializeMs : timeouts.sessionMs;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`no answer to ${step} within ${limitMs} ms; the agent looks stuck`)),
      limitMs,
    );
  });
  const died = agentProcess.exited.then((exit) => {
    throw new Error(`the agent ${describeExit(exit)} during ${step}`);
  });
  try {
    return await Promise.race([promise, timeout, died]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * A started, initialized ACP agent: its process, the connection to it, what it said it can do,
 * and once one is open its session with the mode, config options and model it is in.
 */
export class AcpAgentConnection implements RoutedSession {
  readonly process: AgentProcess;
  readonly connection: acp.ClientConnection;
  readonly capabilities: acp.AgentCapabilities;
  /** How the agent says it can be logged in (`initialize`). */
  readonly authMethods: acp.AuthMethod[];
  /** True once we decided to stop it: its exit is then expected, not a crash. */
  stopping = false;
  sessionId: string | null = null;
  resumed = false;
  /** The session's modes as the agent announced them (`session/set_mode` picks among them). */
  modeId: string | null = null;
  hasModes = false;
  /** The session's config options (a model or mode selector among them, for current agents). */
  configOptions: acp.SessionConfigOption[] = [];
  /** The model last chosen here; null until a turn names one. */
  modelId: string | null = null;
  readonly #timeouts: AcpTimeouts;

  private constructor(
    agentProcess: AgentProcess,
    connection: acp.ClientConnection,
    initialized: acp.InitializeResponse,
    timeouts: AcpTimeouts,
  ) {
    this.process = agentProcess;
    this.connection = connection;
    this.capabilities = initialized.agentCapabilities ?? {};
    this.authMethods = initialized.authMethods ?? [];
    this.#timeouts = timeouts;
  }

  /** Connects to the started `agentProcess` and initializes it, within `initializeMs`. */
  static async initialize(
    agentProcess: AgentProcess,
    options: AcpInitializeOptions,
  ): Promise<AcpAgentConnection> {
    const connection = connectAcpClient(agentProcess, options.handlers);
    const initialized = await bounded<acp.InitializeResponse>(
      agentProcess,
      options.timeouts,
      "initialize",
      connection.agent.request(acp.methods.agent.initialize, {
        protocolVersion: acp.PROTOCOL_VERSION,
        clientCapabilities: {
          fs: { readTextFile: options.serveFileReads, writeTextFile: true },
          terminal: true,
        },
        clientInfo: options.clientInfo,
      }),
    );
    return new AcpAgentConnection(agentProcess, connection, initialized, options.timeouts);
  }

  /** The agent's side of the connection, to send it requests and notifications. */
  get agent(): acp.ClientConnection["agent"] {
    return this.connection.agent;
  }

  /** `promise`, a step of opening the session, bounded by `sessionMs` and the agent's death. */
  bounded<T>(step: string, promise: Promise<T>): Promise<T> {
    return bounded(this.process, this.#timeouts, step, promise);
  }

  /** Takes the session the agent opened, with its modes and options; no model is chosen yet. */
  adopt(sessionId: string, resumed: boolean, opened: OpenedSession): void {
    this.sessionId = sessionId;
    this.resumed = resumed;
    const modes = opened.modes;
    this.hasModes = modes != null;
    this.modeId = modes?.currentModeId ?? null;
    this.configOptions = opened.configOptions ?? [];
    this.modelId = null;
  }

  /** Closes the connection and stops the process, then waits for its exit. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.connection.close();
    await this.process.stop(this.#timeouts.stopGraceMs);
    await this.process.exited;
  }

  /**
   * Puts the agent in the turn's mode and model when they differ from what it has: modes with
   * `session/set_mode` (or a mode config option), models with a model config option
   * (`session/set_config_option`) or, for agents on older SDKs, the unstable `session/set_model`.
   * `onMode` hears of a mode switched, before the model is.
   */
  async applySettings(
    sessionId: string,
    input: Pick<PromptInput, "mode" | "model">,
    onMode: (modeId: string) => void,
  ): Promise<void> {
    const { mode, model } = input;
    if (mode != null && mode !== this.modeId) {
      const option = this.#selector("mode");
      if (this.hasModes || option === null) {
        await this.agent.request(acp.methods.agent.session.setMode, { sessionId, modeId: mode });
      } else {
        await this.#setOption(sessionId, option, mode);
      }
      this.modeId = mode;
      onMode(mode);
    }
    if (model != null && model !== this.modelId) {
      const option = this.#selector("model");
      if (option !== null) {
        if (String(option.currentValue) !== model) {
          await this.#setOption(sessionId, option, model);
        }
      } else {
        await this.agent.request("session/set_model", { sessionId, modelId: model });
      }
      this.modelId = model;
    }
  }

  /** A select config option of the category, as current ACP agents offer models and modes. */
  #selector(category: "model" | "mode"): acp.SessionConfigOption | null {
    return (
      this.configOptions.find(
        (option) => option.category === category && option.type === "select",
      ) ?? null
    );
  }

  async #setOption(
    sessionId: string,
    option: acp.SessionConfigOption,
    value: string,
  ): Promise<void> {
    const answer = await this.agent.request(acp.methods.agent.session.setConfigOption, {
      sessionId,
      configId: option.id,
      value,
    });
    // The agent answers with every option as it now is: later turns compare against those.
    if (answer?.configOptions) this.configOptions = answer.configOptions;
  }
}
