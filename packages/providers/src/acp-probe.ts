import type { ChildProcess } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";
import { errnoCode, errorMessage } from "@deckhand/errors";
import { type LaunchProfile, ProcessLauncher } from "@deckhand/sandbox";
import type { ProviderCommand, ProviderOption } from "@deckhand/wire";
import { chooseAuthMethod } from "./acp-auth.ts";
import { AcpStdoutWatch } from "./acp-stdout-watch.ts";
import type { ProbeResult } from "./probe-store.ts";

export interface ProbeOptions {
  /** The resolved executable. */
  executable: string;
  args: readonly string[];
  /** The agent's whole environment. */
  env: Record<string, string | undefined>;
  /** From spawn to the `initialize` answer (agents that install or index first take a while). */
  initializeTimeoutMs: number;
  /** For the `session/new` answer, once initialized. */
  sessionTimeoutMs: number;
  /** How long to wait for `available_commands_update` after `session/new` answered. */
  commandsWaitMs: number;
  /** Aborting ends the probe as an error and stops the agent. */
  signal?: AbortSignal;
  /** Reported to the agent as `clientInfo.version`. */
  clientVersion?: string;
  /** What the error says to do when the agent refuses a session for want of a login. */
  loginAdvice?: string;
  /** Starts the agent: the environment policy and sandbox; unconfined by default. */
  launcher?: ProcessLauncher;
  /** Its sandbox besides the probe's own directory (state directories, network). */
  profile?: LaunchProfile;
  /** Whether the advice may be to put a key in the provider's env (see `chooseAuthMethod`). */
  keysInEnv?: boolean;
}

/** The variables of `env` that are set. */
function definedEnvironment(env: Record<string, string | undefined>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(env).filter((entry): entry is [string, string] => entry[1] !== undefined),
  );
}

export type ProbeOutcome =
  | { status: "ready"; result: ProbeResult }
  | { status: "not_installed" | "error"; error: string; result: ProbeResult };

/** What to do when an agent that keeps its own login wants one. */
export const OWN_LOGIN_ADVICE =
  "log in with the agent's own CLI, or configure its credentials in the provider's env";

/** Enough of stderr to show why an agent failed, small enough for a database row. */
const STDERR_TAIL_BYTES = 4096;
/**
 * How long `<agent> --version` may take for the diagnostic. Agents started through npx or a
 * Node wrapper take seconds to print a version on a busy machine; 3 s cut them off there and the
 * diagnostic showed no version. A hung command still ends well within a request.
 */
const VERSION_OUTPUT_TIMEOUT_MS = 15_000;
/** After SIGTERM, how long an agent has to exit before SIGKILL. */
const KILL_GRACE_MS = 1_000;

class ProbeFailure extends Error {}

/** Keeps the last `limit` bytes written. */
class TailBuffer {
  private chunks: Buffer[] = [];
  private size = 0;
  private readonly limit: number;

  constructor(limit: number) {
    this.limit = limit;
  }

  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.size += chunk.length;
    while (this.size - (this.chunks[0]?.length ?? 0) >= this.limit) {
      this.size -= this.chunks.shift()!.length;
    }
  }

  text(): string {
    const all = Buffer.concat(this.chunks);
    return all.subarray(Math.max(0, all.length - this.limit)).toString("utf8");
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/** Signals the agent's whole process group, so wrappers (npx, shell scripts) die with it. */
function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    if (process.platform === "win32") child.kill(signal);
    else process.kill(-child.pid, signal);
  } catch {
    // Already gone.
  }
}

async function stopAgent(child: ChildProcess, exited: Promise<unknown>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) {
    // The leader is gone; children it left behind in the group still get a SIGKILL.
    signalGroup(child, "SIGKILL");
    return;
  }
  child.stdin?.end();
  signalGroup(child, "SIGTERM");
  const done = await Promise.race([
    exited.then(() => true),
    sleep(KILL_GRACE_MS).then(() => false),
  ]);
  signalGroup(child, "SIGKILL");
  if (!done) await Promise.race([exited, sleep(KILL_GRACE_MS)]);
}

/** The agent's refusal of a session for want of a login. */
function isAuthRequired(error: unknown): error is acp.RequestError {
  return error instanceof acp.RequestError && error.code === acp.RequestError.authRequired().code;
}

/** A `skill` is a command the agent marks with `_meta.kind: "skill"` (see docs/providers.md). */
export function commandKind(meta: Record<string, unknown> | null | undefined): "command" | "skill" {
  return meta?.kind === "skill" ? "skill" : "command";
}

function toCommands(commands: acp.AvailableCommand[]): ProviderCommand[] {
  return commands.map((command) => ({
    name: command.name,
    description: command.description,
    kind: commandKind(command._meta),
    input_hint: command.input?.hint ?? null,
  }));
}

function selectOptions(option: acp.SessionConfigOption): ProviderOption[] {
  if (option.type !== "select") return [];
  return option.options
    .flatMap((entry) =>
      "group" in entry ? entry.options : [entry as acp.SessionConfigSelectOption],
    )
    .map((entry) => ({
      id: entry.value,
      name: entry.name,
      description: entry.description ?? null,
    }));
}

interface LegacyModels {
  currentModelId?: unknown;
  availableModels?: unknown;
}

/**
 * Models come from a config option of category `model` (current ACP) or, for agents built on
 * older SDKs, from the unstable `models` field of the raw `session/new` result, which the SDK's
 * parser drops.
 */
function sessionModels(
  session: acp.NewSessionResponse,
  raw: Record<string, unknown> | undefined,
): { models: ProviderOption[]; current: string | null } {
  const option = session.configOptions?.find(
    (candidate) => candidate.category === "model" && candidate.type === "select",
  );
  if (option && option.type === "select") {
    return { models: selectOptions(option), current: String(option.currentValue) };
  }
  const legacy = raw?.models as LegacyModels | undefined;
  if (legacy && Array.isArray(legacy.availableModels)) {
    const models = legacy.availableModels.flatMap((model: unknown) => {
      const entry = model as { modelId?: unknown; name?: unknown; description?: unknown };
      if (typeof entry?.modelId !== "string") return [];
      return [
        {
          id: entry.modelId,
          name: typeof entry.name === "string" ? entry.name : entry.modelId,
          description: typeof entry.description === "string" ? entry.description : null,
        },
      ];
    });
    const current = typeof legacy.currentModelId === "string" ? legacy.currentModelId : null;
    return { models, current };
  }
  return { models: [], current: null };
}

function sessionModes(session: acp.NewSessionResponse): {
  modes: ProviderOption[];
  current: string | null;
} {
  if (session.modes) {
    return {
      modes: session.modes.availableModes.map((mode) => ({
        id: mode.id,
        name: mode.name,
        description: mode.description ?? null,
      })),
      current: session.modes.currentModeId,
    };
  }
  const option = session.configOptions?.find(
    (candidate) => candidate.category === "mode" && candidate.type === "select",
  );
  if (option && option.type === "select") {
    return { modes: selectOptions(option), current: String(option.currentValue) };
  }
  return { modes: [], current: null };
}

export function emptyProbeResult(stderrTail: string): ProbeResult {
  return {
    agentName: null,
    version: null,
    models: [],
    currentModel: null,
    modes: [],
    currentMode: null,
    commands: [],
    commandsComplete: false,
    stderrTail,
  };
}

/**
 * Starts the agent in an empty temporary directory, runs ACP `initialize` and `session/new`,
 * waits (bounded) for its slash commands, then closes the session and stops the agent's whole
 * process group. Never throws: a hang, a crash, output that is not ACP or a demand to log in
 * all end as `error` with a message and the tail of stderr.
 */
export async function probeAcpAgent(options: ProbeOptions): Promise<ProbeOutcome> {
  try {
    return await runProbe(options);
  } catch (error) {
    // spawn throws synchronously for arguments it cannot pass (a NUL byte in a config value);
    // that is the provider's problem, not the snapshot's.
    return {
      status: "error",
      error: `cannot start ${options.executable}: ${errorMessage(error)}`,
      result: emptyProbeResult(""),
    };
  }
}

async function runProbe(options: ProbeOptions): Promise<ProbeOutcome> {
  const cwd = await mkdtemp(join(tmpdir(), "deckhand-probe-"));
  let child: ChildProcess;
  try {
    child = (options.launcher ?? ProcessLauncher.unconfined()).spawn({
      executable: options.executable,
      args: options.args,
      cwd,
      environment: definedEnvironment(options.env),
      profile: {
        ...(options.profile ?? { network: { internet: false, modelProxy: true } }),
        writable: [cwd, ...(options.profile?.writable ?? [])],
      },
      stdio: ["pipe", "pipe", "pipe"],
      // Its own process group, so stopping it reaches everything it started.
      detached: process.platform !== "win32",
    });
  } catch (error) {
    await rm(cwd, { recursive: true, force: true });
    throw error;
  }
  return new ProbeRun(options, cwd, child).run();
}

/**
 * One probe of a started agent: the start-up step it is in, each step's bound, what it learnt
 * so far, and the first failure (a crash, a hang, bad output, a cancel) that ends it.
 */
class ProbeRun {
  readonly #options: ProbeOptions;
  readonly #cwd: string;
  readonly #child: ChildProcess;
  readonly #stderr = new TailBuffer(STDERR_TAIL_BYTES);
  readonly #partial = emptyProbeResult("");
  #phase = "start";
  #settled = false;
  #notFound = false;
  #timer: NodeJS.Timeout | undefined;
  #fail: (message: string) => void = () => {};
  /** Rejects with the first failure, unless the probe ended first. */
  readonly #failed: Promise<never>;
  readonly #exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  readonly #onAbort = () => this.#fail("the probe was cancelled");
  readonly #watch: AcpStdoutWatch;
  readonly #connection: acp.ClientConnection;
  readonly #commands: Promise<acp.AvailableCommand[]>;

  constructor(options: ProbeOptions, cwd: string, child: ChildProcess) {
    this.#options = options;
    this.#cwd = cwd;
    this.#child = child;
    this.#failed = new Promise<never>((_, reject) => {
      this.#fail = (message) => {
        if (!this.#settled) reject(new ProbeFailure(message));
      };
    });
    // The probe may finish first; a later failure must not surface as an unhandled rejection.
    this.#failed.catch(() => {});
    this.#exited = new Promise((resolve) => {
      child.once("exit", (code, signal) => resolve({ code, signal }));
      child.once("error", () => resolve({ code: null, signal: null }));
    });
    child.once("error", (error: NodeJS.ErrnoException) => {
      this.#notFound = error.code === "ENOENT";
      this.#fail(`cannot start ${options.executable}: ${error.code ?? error.message}`);
    });
    child.once("exit", (code, signal) => {
      this.#fail(
        `the agent exited (${code !== null ? `code ${code}` : `signal ${signal}`}) during ${this.#phase}`,
      );
    });
    child.stderr!.on("data", (chunk: Buffer) => this.#stderr.push(chunk));
    child.stdin!.on("error", () => {});
    this.#bound(options.initializeTimeoutMs);
    options.signal?.addEventListener("abort", this.#onAbort, { once: true });
    if (options.signal?.aborted) this.#onAbort();
    this.#watch = new AcpStdoutWatch((message) => this.#fail(message));
    let commandsArrived: (commands: acp.AvailableCommand[]) => void = () => {};
    this.#commands = new Promise<acp.AvailableCommand[]>((resolve) => {
      commandsArrived = resolve;
    });
    const app = acp
      .client({ name: "deckhand-provider-probe" })
      .onNotification(acp.methods.client.session.update, ({ params }) => {
        if (params.update.sessionUpdate === "available_commands_update") {
          commandsArrived(params.update.availableCommands);
        }
      });
    const stream = acp.ndJsonStream(
      Writable.toWeb(child.stdin!) as WritableStream<Uint8Array>,
      (Readable.toWeb(child.stdout!) as ReadableStream<Uint8Array>).pipeThrough(this.#watch.stream),
    );
    this.#connection = app.connect(stream);
  }

  async run(): Promise<ProbeOutcome> {
    try {
      const initialized = await this.#initialize();
      const session = await this.#openSession(initialized);
      await this.#awaitCommands();
      if (initialized.agentCapabilities?.sessionCapabilities?.close) {
        this.#phase = "session/close";
        await Promise.race([
          this.#agent.request(acp.methods.agent.session.close, { sessionId: session.sessionId }),
          sleep(500),
          this.#failed,
        ]).catch(() => {});
      }
      this.#settled = true;
      return { status: "ready", result: { ...this.#partial, stderrTail: this.#stderr.text() } };
    } catch (error) {
      const message = await this.#failureMessage(error);
      this.#settled = true;
      return {
        status: this.#notFound ? "not_installed" : "error",
        error: message,
        result: { ...this.#partial, stderrTail: this.#stderr.text() },
      };
    } finally {
      await this.#cleanUp();
    }
  }

  get #agent(): acp.ClientConnection["agent"] {
    return this.#connection.agent;
  }

  /** Each start-up step has a bound of its own, so a slow initialize does not eat the session's. */
  #bound(ms: number): void {
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.#fail(`no answer to ${this.#phase} within ${ms} ms; the agent looks stuck`);
    }, ms);
  }

  /** `promise`, or the failure that ends the probe first. */
  #orFailure<T>(promise: Promise<T>): Promise<T> {
    return Promise.race([promise, this.#failed]);
  }

  async #initialize(): Promise<acp.InitializeResponse> {
    this.#phase = "initialize";
    const initialized = await this.#orFailure(
      this.#agent.request(acp.methods.agent.initialize, {
        protocolVersion: acp.PROTOCOL_VERSION,
        // A probe reads nothing and runs nothing: no file system, no terminal.
        clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
        clientInfo: { name: "deckhand", version: this.#options.clientVersion ?? "0.0.0" },
      }),
    );
    this.#partial.agentName = initialized.agentInfo?.title ?? initialized.agentInfo?.name ?? null;
    this.#partial.version = initialized.agentInfo?.version ?? null;
    return initialized;
  }

  /** `session/new`, logging the agent in first when it asks and its environment serves a way. */
  async #openSession(initialized: acp.InitializeResponse): Promise<acp.NewSessionResponse> {
    const options = this.#options;
    this.#phase = "session/new";
    this.#bound(options.sessionTimeoutMs);
    const newSession = () =>
      this.#orFailure(
        this.#agent.request(acp.methods.agent.session.new, { cwd: this.#cwd, mcpServers: [] }),
      );
    let session: acp.NewSessionResponse;
    try {
      session = await newSession();
    } catch (error) {
      if (!isAuthRequired(error)) throw error;
      // As a session would: log in with a method the agent's environment already serves.
      const choice = chooseAuthMethod({
        methods: initialized.authMethods ?? [],
        env: options.env,
        refusal: error.message,
        advice: options.loginAdvice ?? OWN_LOGIN_ADVICE,
        keysInEnv: options.keysInEnv ?? true,
      });
      if (choice.kind === "refuse") throw new ProbeFailure(choice.message);
      this.#phase = `authenticate (${choice.name})`;
      await this.#orFailure(
        this.#agent.request(acp.methods.agent.authenticate, { methodId: choice.methodId }),
      );
      this.#phase = "session/new";
      this.#bound(options.sessionTimeoutMs);
      session = await newSession();
    }
    const models = sessionModels(session, this.#watch.rawSession);
    const modes = sessionModes(session);
    this.#partial.models = models.models;
    this.#partial.currentModel = models.current;
    this.#partial.modes = modes.modes;
    this.#partial.currentMode = modes.current;
    return session;
  }

  /** The slash commands, if the agent announces them within `commandsWaitMs`. */
  async #awaitCommands(): Promise<void> {
    this.#phase = "the available_commands_update notification";
    clearTimeout(this.#timer);
    const announced = await Promise.race([
      this.#commands,
      sleep(this.#options.commandsWaitMs).then(() => undefined),
      this.#failed,
    ]);
    if (announced) {
      this.#partial.commands = toCommands(announced);
      this.#partial.commandsComplete = true;
    }
  }

  async #failureMessage(error: unknown): Promise<string> {
    if (error instanceof ProbeFailure) return error.message;
    // A broken pipe usually means the agent died; its exit tells the real story.
    const exit = await Promise.race([this.#exited, sleep(300).then(() => undefined)]);
    return exit
      ? `the agent exited (${exit.code !== null ? `code ${exit.code}` : `signal ${exit.signal}`}) during ${this.#phase}`
      : `${this.#phase} failed: ${errorMessage(error)}`;
  }

  async #cleanUp(): Promise<void> {
    this.#settled = true;
    clearTimeout(this.#timer);
    this.#options.signal?.removeEventListener("abort", this.#onAbort);
    this.#connection.close();
    await stopAgent(this.#child, this.#exited);
    this.#child.stdout?.destroy();
    this.#child.stderr?.destroy();
    await rm(this.#cwd, { recursive: true, force: true }).catch(() => {});
  }
}

export interface VersionOutput {
  output: string;
  exitCode: number | null;
  timedOut: boolean;
}

/**
 * Runs `<executable> <versionArgs>` for the diagnostic, bounded in time and output; only for a
 * provider that has a version command (see `ProviderDefinition.versionArgs`).
 */
export async function versionOutput(
  executable: string,
  versionArgs: readonly string[],
  env: Record<string, string | undefined>,
  timeoutMs = VERSION_OUTPUT_TIMEOUT_MS,
  launch: { launcher?: ProcessLauncher; profile?: LaunchProfile } = {},
): Promise<VersionOutput> {
  const cwd = await mkdtemp(join(tmpdir(), "deckhand-version-"));
  const output = new TailBuffer(2048);
  try {
    let child: ChildProcess;
    try {
      child = (launch.launcher ?? ProcessLauncher.unconfined()).spawn({
        executable,
        args: versionArgs,
        cwd,
        environment: definedEnvironment(env),
        profile: {
          ...(launch.profile ?? { network: { internet: false, modelProxy: false } }),
          writable: [cwd, ...(launch.profile?.writable ?? [])],
        },
        stdio: ["ignore", "pipe", "pipe"],
        detached: process.platform !== "win32",
      });
    } catch (error) {
      return {
        output: `cannot start: ${errorMessage(error)}`,
        exitCode: null,
        timedOut: false,
      };
    }
    child.stdout!.on("data", (chunk: Buffer) => output.push(chunk));
    child.stderr!.on("data", (chunk: Buffer) => output.push(chunk));
    const exited = new Promise<number | null>((resolve) => {
      child.once("exit", (code) => resolve(code));
      child.once("error", (error) => {
        output.push(Buffer.from(`cannot start: ${errnoCode(error) ?? error.message}`));
        resolve(null);
      });
    });
    const code = await Promise.race([exited, sleep(timeoutMs).then(() => "timeout" as const)]);
    if (code === "timeout") {
      await stopAgent(child, exited);
      return { output: output.text(), exitCode: null, timedOut: true };
    }
    signalGroup(child, "SIGKILL");
    return { output: output.text(), exitCode: code, timedOut: false };
  } finally {
    await rm(cwd, { recursive: true, force: true }).catch(() => {});
  }
}
