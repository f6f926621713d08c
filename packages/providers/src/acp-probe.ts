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
/** A line this long without a newline is not an ACP message anyone should wait for. */
const MAX_PENDING_LINE_BYTES = 8 * 1024 * 1024;
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

function quote(text: string, limit = 200): string {
  return JSON.stringify(text.length > limit ? `${text.slice(0, limit)}...` : text);
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
  const stderr = new TailBuffer(STDERR_TAIL_BYTES);
  const partial = emptyProbeResult("");
  let phase = "start";
  let settled = false;

  let fail: (message: string) => void = () => {};
  const failed = new Promise<never>((_, reject) => {
    fail = (message) => {
      if (!settled) reject(new ProbeFailure(message));
    };
  });
  // The probe may finish first; a later failure must not surface as an unhandled rejection.
  failed.catch(() => {});

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
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once("exit", (code, signal) => resolve({ code, signal }));
    child.once("error", () => resolve({ code: null, signal: null }));
  });
  let notFound = false;
  child.once("error", (error: NodeJS.ErrnoException) => {
    notFound = error.code === "ENOENT";
    fail(`cannot start ${options.executable}: ${error.code ?? error.message}`);
  });
  child.once("exit", (code, signal) => {
    fail(
      `the agent exited (${code !== null ? `code ${code}` : `signal ${signal}`}) during ${phase}`,
    );
  });
  child.stderr!.on("data", (chunk: Buffer) => stderr.push(chunk));
  child.stdin!.on("error", () => {});

  // Each start-up step has a bound of its own, so a slow initialize does not eat the session's.
  let timer: NodeJS.Timeout | undefined;
  const bound = (ms: number) => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      fail(`no answer to ${phase} within ${ms} ms; the agent looks stuck`);
    }, ms);
  };
  bound(options.initializeTimeoutMs);
  const onAbort = () => fail("the probe was cancelled");
  options.signal?.addEventListener("abort", onAbort, { once: true });
  if (options.signal?.aborted) onAbort();

  // Watches stdout as it passes to the SDK: anything that is not a JSON object on its own line
  // breaks ACP framing, and the raw `session/new` result carries fields the SDK's parser drops.
  let rawSession: Record<string, unknown> | undefined;
  let pending = "";
  const decoder = new TextDecoder();
  const inspectLine = (line: string) => {
    const trimmed = line.trim();
    if (trimmed === "") return;
    let message: unknown;
    try {
      message = JSON.parse(trimmed);
    } catch {
      fail(`the agent wrote something that is not ACP JSON to stdout: ${quote(trimmed)}`);
      return;
    }
    if (typeof message !== "object" || message === null || Array.isArray(message)) {
      fail(`the agent wrote something that is not an ACP message to stdout: ${quote(trimmed)}`);
      return;
    }
    const result = (message as { result?: unknown }).result;
    if (
      typeof result === "object" &&
      result !== null &&
      typeof (result as { sessionId?: unknown }).sessionId === "string"
    ) {
      rawSession = result as Record<string, unknown>;
    }
  };
  const watch = new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, controller) {
      pending += decoder.decode(chunk, { stream: true });
      const lines = pending.split("\n");
      pending = lines.pop() ?? "";
      for (const line of lines) inspectLine(line);
      if (pending.length > MAX_PENDING_LINE_BYTES) {
        fail("the agent wrote more than 8 MiB to stdout without a newline");
      }
      controller.enqueue(chunk);
    },
    flush() {
      inspectLine(pending);
    },
  });

  let commandsArrived: (commands: acp.AvailableCommand[]) => void = () => {};
  const commands = new Promise<acp.AvailableCommand[]>((resolve) => {
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
    (Readable.toWeb(child.stdout!) as ReadableStream<Uint8Array>).pipeThrough(watch),
  );
  const connection = app.connect(stream);
  const agent = connection.agent;

  try {
    phase = "initialize";
    const initialized = await Promise.race([
      agent.request(acp.methods.agent.initialize, {
        protocolVersion: acp.PROTOCOL_VERSION,
        // A probe reads nothing and runs nothing: no file system, no terminal.
        clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
        clientInfo: { name: "deckhand", version: options.clientVersion ?? "0.0.0" },
      }),
      failed,
    ]);
    partial.agentName = initialized.agentInfo?.title ?? initialized.agentInfo?.name ?? null;
    partial.version = initialized.agentInfo?.version ?? null;

    phase = "session/new";
    bound(options.sessionTimeoutMs);
    const newSession = () =>
      Promise.race([agent.request(acp.methods.agent.session.new, { cwd, mcpServers: [] }), failed]);
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
      phase = `authenticate (${choice.name})`;
      await Promise.race([
        agent.request(acp.methods.agent.authenticate, { methodId: choice.methodId }),
        failed,
      ]);
      phase = "session/new";
      bound(options.sessionTimeoutMs);
      session = await newSession();
    }
    const models = sessionModels(session, rawSession);
    const modes = sessionModes(session);
    partial.models = models.models;
    partial.currentModel = models.current;
    partial.modes = modes.modes;
    partial.currentMode = modes.current;

    phase = "the available_commands_update notification";
    clearTimeout(timer);
    const announced = await Promise.race([
      commands,
      sleep(options.commandsWaitMs).then(() => undefined),
      failed,
    ]);
    if (announced) {
      partial.commands = toCommands(announced);
      partial.commandsComplete = true;
    }

    if (initialized.agentCapabilities?.sessionCapabilities?.close) {
      phase = "session/close";
      await Promise.race([
        agent.request(acp.methods.agent.session.close, { sessionId: session.sessionId }),
        sleep(500),
        failed,
      ]).catch(() => {});
    }
    settled = true;
    return { status: "ready", result: { ...partial, stderrTail: stderr.text() } };
  } catch (error) {
    let message: string;
    if (error instanceof ProbeFailure) {
      message = error.message;
    } else {
      // A broken pipe usually means the agent died; its exit tells the real story.
      const exit = await Promise.race([exited, sleep(300).then(() => undefined)]);
      message = exit
        ? `the agent exited (${exit.code !== null ? `code ${exit.code}` : `signal ${exit.signal}`}) during ${phase}`
        : `${phase} failed: ${errorMessage(error)}`;
    }
    settled = true;
    return {
      status: notFound ? "not_installed" : "error",
      error: message,
      result: { ...partial, stderrTail: stderr.text() },
    };
  } finally {
    settled = true;
    clearTimeout(timer);
    options.signal?.removeEventListener("abort", onAbort);
    connection.close();
    await stopAgent(child, exited);
    child.stdout?.destroy();
    child.stderr?.destroy();
    await rm(cwd, { recursive: true, force: true }).catch(() => {});
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
  timeoutMs = 3_000,
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
