import { randomUUID } from "node:crypto";
import { errorMessage } from "@deckhand/errors";
import { ProcessClient } from "@deckhand/process-manager";
import { redactSecrets, redactValue } from "@deckhand/secrets";
import type { AgentEvent, PermissionOptionKind, StopReason } from "@deckhand/wire";
import { FileClient } from "@deckhand/workspace-files";
import type {
  AgentBackend,
  AgentSessionContext,
  BackendHealth,
  EnsureSessionResult,
  PermissionAnswer,
  PromptInput,
  PromptResult,
} from "../../backend.ts";
import { AgentBackendError } from "../../errors.ts";
import { decidePermission } from "../../permission-gate.ts";
import { createInMemoryPermissionMemory, type PermissionMemory } from "../../permission-memory.ts";
import { ModelClientError } from "../model/model-client-error.ts";
import { type RetryPolicy, runModelTurnWithRetry } from "../model/model-turn.ts";
import type { ModelUsage, ResponseItem } from "../model/responses-events.ts";
import type { ApprovalPolicy } from "../safety/command-safety.ts";
import type { ExecuteResult } from "../tools/execute-tool.ts";
import { toolResultText } from "../tools/model-output.ts";
import {
  assessToolCall,
  invokeTool,
  nativeTools,
  responsesTools,
  type ToolOutcome,
} from "../tools/registry.ts";
import type { NativeTool, ToolContext } from "../tools/tool-context.ts";
import { DEFAULT_NATIVE_INSTRUCTIONS } from "./instructions.ts";
import type { RecordEntry, SessionRecorder } from "./recorder.ts";
import { type ApprovalScope, approvalScope, permissionMemoryKey } from "./session-approvals.ts";
import { type Submission, SubmissionSchema } from "./submission.ts";
import { looseArguments, toolKind, toolLocations, toolTitle } from "./tool-presentation.ts";

/** Shaped like the ACP backend's logger, so one adapter serves both. */
export interface NativeAgentLogger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  /** Per request and per tool call; left out, those lines are not produced at all. */
  debug?(message: string, fields?: Record<string, unknown>): void;
}

export interface NativeBackendOptions extends AgentSessionContext {
  /** The agent's name in the session (its agent type): "always" answers are kept under it. */
  agent: string;
  /**
   * Where "always" answers are kept, per (session, agent, tool kind) and for `execute` per
   * command; an in-memory one when omitted. The server gives the database-backed one ACP agents
   * use, so answers outlive the backend.
   */
  permissionMemory?: PermissionMemory;
  /** The model name sent to the Responses API. */
  model: string;
  /** The system prompt; DEFAULT_NATIVE_INSTRUCTIONS when not given. */
  instructions?: string;
  /** When to ask the user before a tool call; `on-request` when not given. */
  approvalPolicy?: ApprovalPolicy;
  retry?: Partial<RetryPolicy>;
  /** Where submissions, events and conversation items are appended; also what resume reads. */
  recorder?: SessionRecorder;
  logger?: NativeAgentLogger;
  /** The fetch model requests go through (the workspace agent clients keep their own). */
  fetch?: typeof fetch;
  /** Passed to the Responses API as is, e.g. `{ effort: "medium", summary: "auto" }`. */
  reasoning?: { effort?: string; summary?: string };
  /** A model stream silent for this long counts as dropped (and is retried). */
  idleTimeoutMs?: number;
  /** Model requests one turn may make before it stops with `max_turn_requests`. Default 100. */
  maxRequestsPerTurn?: number;
  /** The tools offered; every native tool when not given. */
  tools?: readonly NativeTool[];
  /** Source of new session ids (tests make them predictable); random UUIDs by default. */
  newSessionId?: () => string;
}

/** The native agent as a backend, with its submission queue and event stream exposed. */
export interface NativeBackend extends AgentBackend {
  /** The live session's id, or null before `ensureSession` and after `closeSession`. */
  readonly sessionId: string | null;
  /**
   * Queues a submission (recorded first, then handled in order); returns its id. `prompt`,
   * `cancel` and `respondToPermission` are built on it.
   */
  submit(submission: Submission): string;
  /** Every event of the session as it is emitted, whichever turn it belongs to. */
  subscribe(listener: (event: AgentEvent) => void): () => void;
  /** Resolves once no turn is running. */
  idle(): Promise<void>;
}

const DEFAULT_MAX_REQUESTS_PER_TURN = 100;

type EventListener = (event: AgentEvent) => Promise<void> | void;

/** A call the model made, as the loop handles it. */
interface ModelCall {
  call_id: string;
  name: string;
  /** The function call's JSON text, or the object a custom tool call's input stands for. */
  arguments: unknown;
  /** Custom tool calls are answered with `custom_tool_call_output` items. */
  custom: boolean;
  /** Whether a `tool_call` event went out (a call cut off before it gets none). */
  announced: boolean;
}

interface Turn {
  messageId: string;
  controller: AbortController;
  listeners: EventListener[];
  /** User input that arrived during the turn, for the next model request. */
  injected: string[];
  /** The answer text shown so far (what the `text` events add up to, retries rolled back). */
  text: string;
  /** Calls whose output the conversation still lacks. */
  openCalls: Map<string, ModelCall>;
  /** Past its last model request: new input starts the next turn instead of joining this one. */
  closing: boolean;
  done: Promise<PromptResult>;
  finish(result: PromptResult): void;
}

/** What one model request came to once its stream completed. */
interface ModelResponse {
  items: ResponseItem[];
  calls: ModelCall[];
  usage: ModelUsage | undefined;
}

interface PendingPermission {
  turn: Turn;
  resolve(outcome: PermissionOptionKind | "cancelled"): void;
}

const REFUSED_ONCE =
  "The user rejected this call, so it did not run. Do not retry it in another form; continue without it, or explain what you needed and why.";
const REFUSED_ALWAYS =
  "The user rejected this call and calls like it for the rest of the session, so it did not run. Do not retry it in another form; continue without it, or explain what you needed and why.";
const RETRY_REFUSED_ONCE =
  "The command failed, and the user declined to let it run again. Do not retry it in another form; continue without it, or explain what you needed and why.";
const RETRY_REFUSED_ALWAYS =
  "The command failed, and the user declined to let it run again, for the rest of the session. Do not retry it in another form; continue without it, or explain what you needed and why.";
const INTERRUPTED =
  "The user interrupted the turn before this call finished; its effect is unknown.";

function userMessage(text: string): ResponseItem {
  return { type: "message", role: "user", content: [{ type: "input_text", text }] };
}

/**
 * An output item as it goes back into the next request. Requests are stateless (`store:
 * false`), so ids that point at server-side items are dropped, and reasoning is kept only
 * when it carries its encrypted content (the upstream cannot look it up otherwise).
 */
function forHistory(item: ResponseItem): ResponseItem | null {
  if (item.type === "reasoning" && typeof item.encrypted_content !== "string") return null;
  const { id: _id, ...rest } = item;
  return rest as ResponseItem;
}

/**
 * A command that ran (or could not be started) and failed: non-zero exit or an error. One still
 * running at its timeout, or started in the background, has not failed.
 */
function commandFailed(result: unknown): boolean {
  if (!unsuccessful(result)) return false;
  return (result as Partial<ExecuteResult>).background_process_id == null;
}

/** execute reports a failing command as a result with `success: false`, not as an error. */
function unsuccessful(result: unknown): boolean {
  return (
    result !== null &&
    typeof result === "object" &&
    "success" in result &&
    (result as { success: unknown }).success === false
  );
}

function permissionOptions(scope: ApprovalScope) {
  const what = scope.type === "command" ? "this command" : `${scope.kind} calls`;
  return [
    { option_id: "allow_once", name: "Allow once", kind: "allow_once" as const },
    { option_id: "allow_always", name: `Always allow ${what}`, kind: "allow_always" as const },
    { option_id: "reject_once", name: "Reject", kind: "reject_once" as const },
    { option_id: "reject_always", name: `Always reject ${what}`, kind: "reject_always" as const },
  ];
}

/**
 * Deckhand's own agent, after the Codex core loop: submissions (configure, user input,
 * interrupt, approval answers) go in, events come out, and each turn alternates model requests
 * with the tool calls they ask for until a response asks for none.
 *
 * Retries and partial text: a `retry` event voids the `text` and `reasoning` events of its
 * message since the last event of any other type (or since the turn began). The loop emits
 * nothing but text and reasoning while a model response streams, and a tool call's events only
 * after its response completed, so that span is exactly what the failed attempt streamed; the
 * retried attempt streams it again and `PromptResult.text` counts it once.
 *
 * Other rules a consumer relies on: each model request that completes yields one `usage`
 * event (a turn's usage is their sum); input injected into a running turn joins that turn, so
 * its events carry the running turn's `message_id` and its `prompt` resolves with that turn's
 * result; answers of successive requests in one turn are joined by a blank line.
 */
export class NativeAgent implements NativeBackend {
  readonly #context: AgentSessionContext;
  readonly #modelProxy: { url: string; token: string; jobId: string };
  readonly #options: NativeBackendOptions;
  readonly #tools: readonly NativeTool[];
  readonly #responsesTools: ReturnType<typeof responsesTools>;
  readonly #processes: ProcessClient;
  readonly #files: FileClient;
  readonly #memory: PermissionMemory;
  readonly #subscribers = new Set<(event: AgentEvent) => void>();
  readonly #permissions = new Map<string, PendingPermission>();
  #config: { model: string; instructions: string; approvalPolicy: ApprovalPolicy };
  #history: ResponseItem[] = [];
  #turn: Turn | null = null;
  #sessionId: string | null = null;
  #resumed = false;
  #closedSessionId: string | null = null;
  #status: BackendHealth["status"] = "idle";
  #lastError: string | null = null;
  #disposed = false;
  #seq = 0;
  #submissions = 0;
  #permissionRequests = 0;

  constructor(options: NativeBackendOptions) {
    if (options.modelProxy === null) {
      throw new AgentBackendError(
        "invalid_options",
        "the native agent needs a model proxy (url, token, job id) to reach its model",
      );
    }
    this.#options = options;
    this.#context = options;
    this.#memory = options.permissionMemory ?? createInMemoryPermissionMemory();
    this.#modelProxy = options.modelProxy;
    this.#tools = options.tools ?? nativeTools;
    this.#responsesTools = responsesTools(this.#tools);
    this.#config = {
      model: options.model,
      instructions: options.instructions ?? DEFAULT_NATIVE_INSTRUCTIONS,
      approvalPolicy: options.approvalPolicy ?? "on-request",
    };
    const token = options.workspaceAgent.token ?? undefined;
    this.#processes = new ProcessClient({
      baseUrl: options.workspaceAgent.url,
      token,
      chatId: options.chatId,
    });
    // Every file request is confined to the worktree, symlinks resolved against it.
    this.#files = new FileClient({
      baseUrl: options.workspaceAgent.url,
      ...(token === undefined ? {} : { token }),
      root: options.worktreePath,
    });
  }

  get sessionId(): string | null {
    return this.#sessionId;
  }

  // ---- AgentBackend --------------------------------------------------------------------------

  async ensureSession(): Promise<EnsureSessionResult> {
    this.#assertUsable();
    if (this.#sessionId !== null) {
      return { agentSessionId: this.#sessionId, resumed: this.#resumed };
    }
    const resumeId = this.#closedSessionId ?? this.#context.resumeSessionId;
    let resumed = false;
    let sessionId: string;
    const recorded = resumeId !== null ? await this.#options.recorder?.load?.(resumeId) : undefined;
    if (resumeId !== null && recorded) {
      this.#restore(recorded);
      sessionId = resumeId;
      resumed = true;
    } else {
      this.#history = [];
      this.#seq = 0;
      sessionId = this.#options.newSessionId?.() ?? randomUUID();
    }
    this.#closedSessionId = null;
    this.#sessionId = sessionId;
    this.#resumed = resumed;
    this.#status = "idle";
    // The settings the session starts with, so a replay of the recording starts the same way.
    this.submit({
      type: "configure",
      model: this.#config.model,
      approval_policy: this.#config.approvalPolicy,
      instructions: this.#config.instructions,
    });
    this.#options.logger?.debug?.("native agent session ready", { session_id: sessionId, resumed });
    return { agentSessionId: sessionId, resumed };
  }

  async prompt(input: PromptInput): Promise<PromptResult> {
    await this.ensureSession();
    // The model is the name asked of the model proxy; a turn naming another switches to it.
    if (input.model != null && input.model !== this.#config.model) {
      this.submit({ type: "configure", model: input.model });
    }
    const turn = this.#dispatch(
      { type: "user_input", message_id: input.messageId, text: input.text },
      input.onEvent,
    );
    if (turn === null) throw new AgentBackendError("internal", "user input started no turn");
    const signal = input.signal;
    if (signal === undefined) return turn.done;
    const onAbort = () => {
      // The session may be gone by the time the caller gives up; then there is nothing to stop.
      if (this.#sessionId !== null && !this.#disposed) this.submit({ type: "interrupt" });
    };
    if (signal.aborted) onAbort();
    else signal.addEventListener("abort", onAbort, { once: true });
    try {
      return await turn.done;
    } finally {
      signal.removeEventListener("abort", onAbort);
    }
  }

  async cancel(): Promise<void> {
    const turn = this.#turn;
    if (turn === null || this.#sessionId === null) return;
    this.submit({ type: "interrupt" });
    await turn.done;
  }

  async respondToPermission(answer: PermissionAnswer): Promise<void> {
    if (this.#sessionId === null) return;
    this.submit({ type: "approval", request_id: answer.requestId, outcome: answer.outcome });
  }

  async closeSession(): Promise<void> {
    const sessionId = this.#sessionId;
    if (sessionId === null) return;
    await this.cancel();
    this.#sessionId = null;
    this.#closedSessionId = sessionId;
    this.#history = [];
    this.#status = "closed";
    await this.#options.recorder?.end?.(sessionId);
  }

  async dispose(): Promise<void> {
    if (this.#disposed) return;
    await this.closeSession();
    this.#disposed = true;
    this.#status = "closed";
    this.#subscribers.clear();
  }

  health(): BackendHealth {
    return { status: this.#status, pid: null, lastError: this.#lastError };
  }

  // ---- Submission queue and event stream ------------------------------------------------------

  submit(submission: Submission): string {
    return this.#submit(submission).id;
  }

  subscribe(listener: (event: AgentEvent) => void): () => void {
    this.#subscribers.add(listener);
    return () => this.#subscribers.delete(listener);
  }

  async idle(): Promise<void> {
    while (this.#turn !== null) await this.#turn.done;
  }

  #submit(submission: Submission, listener?: EventListener): { id: string; turn: Turn | null } {
    this.#assertUsable();
    const sessionId = this.#sessionId;
    if (sessionId === null) {
      throw new AgentBackendError(
        "no_session",
        "the native agent has no session: call ensureSession first",
      );
    }
    const parsed = SubmissionSchema.safeParse(submission);
    if (!parsed.success) {
      throw new AgentBackendError("invalid_arguments", `not a submission: ${parsed.error.message}`);
    }
    this.#submissions += 1;
    const id = `sub-${this.#submissions}`;
    this.#record({ kind: "submission", id, submission: parsed.data });
    // Handled at once: JavaScript runs one thing at a time, so handling each submission as it
    // is recorded keeps the queue's order without a queue object.
    const op = parsed.data;
    switch (op.type) {
      case "configure":
        this.#config = {
          model: op.model ?? this.#config.model,
          instructions: op.instructions ?? this.#config.instructions,
          approvalPolicy: op.approval_policy ?? this.#config.approvalPolicy,
        };
        return { id, turn: null };
      case "user_input": {
        const running = this.#turn;
        if (running !== null && !running.closing) {
          running.injected.push(op.text);
          if (listener !== undefined) running.listeners.push(listener);
          return { id, turn: running };
        }
        // A turn that is only finishing up goes first; the new one starts when it is done.
        const after = running?.done;
        return { id, turn: this.#startTurn(op.message_id, op.text, listener, after) };
      }
      case "interrupt":
        // A turn waiting behind a finishing one is aborted before it starts.
        this.#turn?.controller.abort();
        return { id, turn: this.#turn };
      case "approval": {
        const pending = this.#permissions.get(op.request_id);
        if (pending === undefined) {
          // Answers race with cancels and with each other; a late one has nothing to do.
          this.#options.logger?.warn("permission answer for no pending request ignored", {
            session_id: sessionId,
            request_id: op.request_id,
          });
        } else {
          pending.resolve(op.outcome);
        }
        return { id, turn: this.#turn };
      }
    }
  }

  #dispatch(submission: Submission, listener: EventListener): Turn | null {
    return this.#submit(submission, listener).turn;
  }

  #record(entry: DistributiveOmit<RecordEntry, "seq" | "at">): void {
    const recorder = this.#options.recorder;
    if (recorder === undefined || this.#sessionId === null) return;
    this.#seq += 1;
    recorder.record(this.#sessionId, {
      ...redactValue(entry, this.#secrets()),
      seq: this.#seq,
      at: new Date().toISOString(),
    } as RecordEntry);
  }

  async #emit(turn: Turn, raw: AgentEvent): Promise<void> {
    // Every event leaves through here: a secret a tool printed is redacted before it is
    // recorded, streamed or stored.
    const event = redactValue(raw, this.#secrets());
    this.#record({ kind: "event", event });
    for (const subscriber of this.#subscribers) {
      try {
        subscriber(event);
      } catch (error) {
        this.#options.logger?.warn("an event subscriber failed", {
          session_id: this.#sessionId,
          event_type: event.type,
          error: String(error),
        });
      }
    }
    for (const listener of turn.listeners) {
      try {
        await listener(event);
      } catch (error) {
        // A consumer's failure is its own; the turn goes on and the recording keeps the event.
        this.#options.logger?.warn("a turn's event listener failed", {
          session_id: this.#sessionId,
          event_type: event.type,
          error: String(error),
        });
      }
    }
  }

  #appendHistory(raw: ResponseItem): void {
    // The conversation is what the next model request sends: a tool's output holding a secret
    // reaches the model redacted.
    const item = redactValue(raw, this.#secrets());
    this.#history.push(item);
    this.#record({ kind: "item", item });
  }

  /** Rebuilds the conversation and counters from a recording, to resume its session. */
  #restore(entries: RecordEntry[]): void {
    this.#history = [];
    this.#permissionRequests = 0;
    for (const entry of entries) {
      if (entry.kind === "item") this.#history.push(entry.item as ResponseItem);
      else if (entry.kind === "event" && entry.event.type === "permission_request") {
        this.#permissionRequests += 1;
      } else if (entry.kind === "submission") this.#submissions += 1;
    }
    this.#seq = entries.at(-1)?.seq ?? 0;
  }

  #assertUsable(): void {
    if (this.#disposed) throw new AgentBackendError("disposed", "the native agent was disposed");
  }

  // ---- The turn loop -------------------------------------------------------------------------

  #startTurn(
    messageId: string,
    text: string,
    listener: EventListener | undefined,
    after: Promise<unknown> | undefined,
  ): Turn {
    let finish!: (result: PromptResult) => void;
    const done = new Promise<PromptResult>((resolveDone) => {
      finish = resolveDone;
    });
    const turn: Turn = {
      messageId,
      controller: new AbortController(),
      listeners: listener === undefined ? [] : [listener],
      injected: [text],
      text: "",
      openCalls: new Map(),
      closing: false,
      done,
      finish,
    };
    this.#turn = turn;
    this.#status = "active";
    void (after === undefined ? this.#runTurn(turn) : after.then(() => this.#runTurn(turn)));
    return turn;
  }

  async #runTurn(turn: Turn): Promise<void> {
    let stopReason: StopReason = "end_turn";
    const signal = turn.controller.signal;
    const maxRequests = this.#options.maxRequestsPerTurn ?? DEFAULT_MAX_REQUESTS_PER_TURN;
    try {
      for (let requests = 0; ; requests += 1) {
        for (const text of turn.injected.splice(0)) this.#appendHistory(userMessage(text));
        if (signal.aborted) throw new AgentBackendError("aborted", "the turn was interrupted");
        if (requests >= maxRequests) {
          stopReason = "max_turn_requests";
          break;
        }
        const response = await this.#requestModel(turn);
        for (const item of response.items) {
          const kept = forHistory(item);
          if (kept !== null) this.#appendHistory(kept);
        }
        for (const call of response.calls) turn.openCalls.set(call.call_id, call);
        if (response.usage !== undefined) {
          await this.#emit(turn, {
            type: "usage",
            message_id: turn.messageId,
            input_tokens: response.usage.input_tokens,
            output_tokens: response.usage.output_tokens,
            total_tokens: response.usage.total_tokens,
          });
        }
        if (response.calls.length === 0) {
          // Input that arrived while the model answered still needs its answer.
          if (turn.injected.length > 0) continue;
          break;
        }
        for (const call of response.calls) {
          if (signal.aborted) throw new AgentBackendError("aborted", "the turn was interrupted");
          await this.#runToolCall(turn, call);
        }
      }
    } catch (error) {
      if (signal.aborted) {
        stopReason = "cancelled";
      } else {
        stopReason = "error";
        const message = this.#redact(
          error instanceof ModelClientError
            ? `the model request failed: ${error.message}`
            : `the native agent failed: ${errorMessage(error)}`,
        );
        this.#lastError = message;
        this.#options.logger?.warn("turn failed", { session_id: this.#sessionId, error: message });
        await this.#emit(turn, { type: "error", message_id: turn.messageId, message });
      }
    }
    turn.closing = true;
    // Every call the model made needs an output, or the next request is refused upstream.
    const outcome =
      stopReason === "cancelled" ? INTERRUPTED : "The turn failed before this call ran.";
    for (const call of turn.openCalls.values()) {
      if (call.announced) {
        await this.#emit(turn, {
          type: "tool_update",
          message_id: turn.messageId,
          tool_call_id: call.call_id,
          status: "failed",
          content: outcome,
        });
      }
      this.#closeCall(turn, call, outcome);
    }
    // Input injected too late for this turn's last request is kept for the next one.
    for (const text of turn.injected.splice(0)) this.#appendHistory(userMessage(text));
    await this.#emit(turn, {
      type: "turn_end",
      message_id: turn.messageId,
      stop_reason: stopReason,
    });
    if (this.#turn === turn) {
      this.#turn = null;
      if (this.#status === "active") this.#status = "idle";
    }
    turn.finish({ stopReason, text: turn.text });
  }

  /** The secrets this agent knows besides the process's own (see @deckhand/secrets). */
  #secrets(): (string | null)[] {
    return [this.#modelProxy.token, this.#context.workspaceAgent.token];
  }

  #redact(text: string): string {
    return redactSecrets(text, this.#secrets());
  }

  /** Streams one model request (with retries) and gathers what it asked for. */
  async #requestModel(turn: Turn): Promise<ModelResponse> {
    const fresh = () => ({
      items: [] as ResponseItem[],
      calls: [] as ModelCall[],
      usage: undefined as ModelUsage | undefined,
      textStarted: false,
      streamed: new Set<string | undefined>(),
    });
    let attempt = fresh();
    const textBefore = turn.text;
    const config = this.#config;
    this.#options.logger?.debug?.("model request", {
      session_id: this.#sessionId,
      model: config.model,
      items: this.#history.length,
    });
    const emitText = async (itemId: string | undefined, raw: string) => {
      attempt.streamed.add(itemId);
      let delta = raw;
      if (!attempt.textStarted) {
        attempt.textStarted = true;
        // Answers of successive requests would run together on screen and in the result.
        if (turn.text !== "" && !turn.text.endsWith("\n")) delta = `\n\n${delta}`;
      }
      turn.text += delta;
      await this.#emit(turn, { type: "text", message_id: turn.messageId, delta });
    };
    const events = runModelTurnWithRetry({
      baseUrl: this.#modelProxy.url,
      token: this.#modelProxy.token,
      jobId: this.#modelProxy.jobId,
      model: config.model,
      instructions: config.instructions,
      input: this.#history.slice(),
      tools: this.#responsesTools,
      parallelToolCalls: false,
      include: ["reasoning.encrypted_content"],
      signal: turn.controller.signal,
      ...(this.#options.reasoning ? { reasoning: this.#options.reasoning } : {}),
      ...(this.#options.retry ? { retry: this.#options.retry } : {}),
      ...(this.#options.fetch ? { fetch: this.#options.fetch } : {}),
      ...(this.#options.idleTimeoutMs === undefined
        ? {}
        : { idleTimeoutMs: this.#options.idleTimeoutMs }),
    });
    for await (const event of events) {
      switch (event.type) {
        case "text_delta":
          await emitText(event.item_id, event.delta);
          break;
        case "reasoning_delta":
          attempt.streamed.add(event.item_id);
          await this.#emit(turn, {
            type: "reasoning",
            message_id: turn.messageId,
            delta: event.delta,
          });
          break;
        case "message":
          // Some upstreams send a message whole, without deltas.
          if (event.text !== "" && !attempt.streamed.has(event.item_id)) {
            await emitText(event.item_id, event.text);
          }
          attempt.items.push(event.item);
          break;
        case "reasoning":
          if (event.summary.length > 0 && !attempt.streamed.has(event.item_id)) {
            await this.#emit(turn, {
              type: "reasoning",
              message_id: turn.messageId,
              delta: event.summary.join("\n\n"),
            });
          }
          attempt.items.push(event.item);
          break;
        case "function_call":
          attempt.calls.push({
            call_id: event.call_id,
            name: event.name,
            arguments: event.arguments,
            custom: false,
            announced: false,
          });
          attempt.items.push(event.item);
          break;
        case "custom_tool_call":
          attempt.calls.push({
            call_id: event.call_id,
            name: event.name,
            // Codex-trained models send apply_patch as a free-form tool: its input is the patch.
            arguments: event.name === "apply_patch" ? { patch: event.input } : event.input,
            custom: true,
            announced: false,
          });
          attempt.items.push(event.item);
          break;
        case "completed":
          attempt.usage = event.usage;
          break;
        case "retry":
          // What the failed attempt streamed is void (see the class comment).
          turn.text = textBefore;
          attempt = fresh();
          await this.#emit(turn, {
            type: "retry",
            message_id: turn.messageId,
            attempt: event.attempt,
            delay_ms: event.delay_ms,
            reason: this.#redact(event.reason),
          });
          break;
        case "created":
          break;
      }
    }
    return { items: attempt.items, calls: attempt.calls, usage: attempt.usage };
  }

  #closeCall(turn: Turn, call: ModelCall, output: string): void {
    turn.openCalls.delete(call.call_id);
    this.#appendHistory({
      type: call.custom ? "custom_tool_call_output" : "function_call_output",
      call_id: call.call_id,
      output,
    });
  }

  /** Announces a call, settles its approval, runs it and hands its output to the model. */
  async #runToolCall(turn: Turn, call: ModelCall): Promise<void> {
    const args = looseArguments(call.arguments);
    const title = toolTitle(call.name, args);
    const locations = toolLocations(call.name, args);
    let input: unknown = call.arguments;
    if (typeof call.arguments === "string") {
      input =
        Object.keys(args).length > 0 || call.arguments.trim() === "{}" ? args : call.arguments;
    }
    await this.#emit(turn, {
      type: "tool_call",
      message_id: turn.messageId,
      tool_call_id: call.call_id,
      title,
      kind: toolKind(call.name),
      status: "pending",
      input,
      ...(locations.length > 0 ? { locations } : {}),
    });
    call.announced = true;
    const { refusal, askOnFailure } = await this.#approve(turn, call, title);
    if (refusal !== null) {
      await this.#emit(turn, {
        type: "tool_update",
        message_id: turn.messageId,
        tool_call_id: call.call_id,
        status: "failed",
        content: refusal,
        output: { refused: true },
      });
      this.#closeCall(turn, call, refusal);
      return;
    }
    await this.#emit(turn, {
      type: "tool_update",
      message_id: turn.messageId,
      tool_call_id: call.call_id,
      status: "in_progress",
    });
    this.#options.logger?.debug?.("tool call", {
      session_id: this.#sessionId,
      tool: call.name,
      call_id: call.call_id,
    });
    const context: ToolContext = {
      processes: this.#processes,
      files: this.#files,
      chatId: this.#context.chatId,
      worktreeRoot: this.#context.worktreePath,
      signal: turn.controller.signal,
    };
    // Throws only when interrupted; the loop turns that into a cancelled turn.
    let outcome = await invokeTool(call.name, call.arguments, context, this.#tools);
    if (askOnFailure && outcome.ok && commandFailed(outcome.result)) {
      outcome = await this.#retryAfterFailure(turn, call, title, outcome, context);
    }
    const failed = !outcome.ok || unsuccessful(outcome.result);
    await this.#emit(turn, {
      type: "tool_update",
      message_id: turn.messageId,
      tool_call_id: call.call_id,
      status: failed ? "failed" : "completed",
      content: outcome.output,
      output: outcome.ok
        ? outcome.result
        : { error: { code: outcome.error.code, message: outcome.error.message } },
    });
    this.#closeCall(turn, call, outcome.output);
  }

  /**
   * `on-failure`, after Codex's escalation on failure: the command ran without asking and
   * failed, so the user is asked whether to run it again. Deckhand has no sandbox to lift, so
   * the retry is the same command once more (worth it for what fails for a passing reason, such
   * as the network); the user sees why it failed. Allowed, the model gets the retry's result;
   * refused, the original failure with the refusal added.
   */
  async #retryAfterFailure(
    turn: Turn,
    call: ModelCall,
    title: string,
    failure: Extract<ToolOutcome, { ok: true }>,
    context: ToolContext,
  ): Promise<ToolOutcome> {
    const result = failure.result as ExecuteResult;
    // What the first run printed, while the user decides; the call is not over yet.
    await this.#emit(turn, {
      type: "tool_update",
      message_id: turn.messageId,
      tool_call_id: call.call_id,
      content: failure.output,
      output: failure.result,
    });
    const answer = await this.#decide(
      turn,
      call,
      `Run again: ${title} (${result.error ?? "it failed"}; on-failure asks before running a failed command again)`,
    );
    if (answer === "allow_once" || answer === "allow_always") {
      await this.#emit(turn, {
        type: "tool_update",
        message_id: turn.messageId,
        tool_call_id: call.call_id,
        status: "in_progress",
        title: `${title} (again)`,
      });
      return invokeTool(call.name, call.arguments, context, this.#tools);
    }
    const refused = {
      ...result,
      note: answer === "reject_always" ? RETRY_REFUSED_ALWAYS : RETRY_REFUSED_ONCE,
    };
    return { ok: true, result: refused, output: toolResultText(refused) };
  }

  /**
   * Whether the call may run (`refusal` null) or the refusal the model is told, and whether a
   * failure of it asks to run it again (`on-failure`). Asks the user when the policy says so and
   * no "always" answer of the session covers the call.
   */
  async #approve(
    turn: Turn,
    call: ModelCall,
    title: string,
  ): Promise<{ refusal: string | null; askOnFailure: boolean }> {
    const assessment = assessToolCall(
      call.name,
      call.arguments,
      this.#config.approvalPolicy,
      this.#context.worktreePath,
      this.#tools,
    );
    const askOnFailure = assessment.askOnFailure;
    if (assessment.decision === "auto_approve") return { refusal: null, askOnFailure };
    if (assessment.decision === "forbid") {
      return { refusal: `Refused without running: ${assessment.reason}.`, askOnFailure };
    }
    // Looked up only for calls that would ask, so a read-only call costs no store round trip.
    const answer = await this.#decide(turn, call, `${title} (${assessment.reason})`);
    if (answer === "allow_once" || answer === "allow_always") {
      return { refusal: null, askOnFailure };
    }
    return { refusal: answer === "reject_always" ? REFUSED_ALWAYS : REFUSED_ONCE, askOnFailure };
  }

  /**
   * The session's "always" answer covering the call, or else the user's answer to `title`, an
   * "always" one remembered. A request cancelled by an interrupt throws; an answer of
   * `cancelled` otherwise is returned as is (callers refuse it once).
   */
  async #decide(
    turn: Turn,
    call: ModelCall,
    title: string,
  ): Promise<PermissionOptionKind | "cancelled"> {
    const scope = approvalScope(call.name, call.arguments);
    const { outcome: answer } = await decidePermission({
      memory: this.#memory,
      key: permissionMemoryKey(scope, {
        sessionId: this.#context.sessionId,
        agent: this.#options.agent,
      }),
      ask: () => this.#askPermission(turn, call, title, scope),
      logger: this.#options.logger,
      logFields: { session_id: this.#sessionId },
    });
    if (answer === "cancelled" && turn.controller.signal.aborted) {
      throw new AgentBackendError("aborted", "the turn was interrupted");
    }
    return answer;
  }

  async #askPermission(
    turn: Turn,
    call: ModelCall,
    title: string,
    scope: ApprovalScope,
  ): Promise<PermissionOptionKind | "cancelled"> {
    this.#permissionRequests += 1;
    // Counted per session so a replay of a recording asks with the same ids.
    const requestId = `perm-${this.#permissionRequests}`;
    const signal = turn.controller.signal;
    let onAbort: () => void = () => undefined;
    const answer = new Promise<PermissionOptionKind | "cancelled">((resolveAnswer) => {
      // Registered before the request goes out: a listener may answer before emit returns.
      this.#permissions.set(requestId, { turn, resolve: resolveAnswer });
      onAbort = () => resolveAnswer("cancelled");
      if (signal.aborted) onAbort();
      else signal.addEventListener("abort", onAbort, { once: true });
    });
    await this.#emit(turn, {
      type: "permission_request",
      message_id: turn.messageId,
      request_id: requestId,
      tool_call_id: call.call_id,
      title,
      options: permissionOptions(scope),
    });
    let outcome: PermissionOptionKind | "cancelled";
    try {
      outcome = await answer;
    } finally {
      this.#permissions.delete(requestId);
      signal.removeEventListener("abort", onAbort);
    }
    await this.#emit(turn, {
      type: "permission_resolved",
      message_id: turn.messageId,
      request_id: requestId,
      outcome,
    });
    return outcome;
  }
}

/** Omit over each member of a union, keeping it a union. */
type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/** Deckhand's native agent as an AgentBackend; see NativeAgent. */
export function createNativeBackend(options: NativeBackendOptions): NativeBackend {
  return new NativeAgent(options);
}
