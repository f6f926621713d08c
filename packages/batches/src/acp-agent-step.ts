// A `codingAgent` step of type `acp` (a Deckhand extension): any provider Deckhand has (a
// built-in ACP agent or a custom one of providers.json) run headless in the workspace. The prompt
// is one turn; permission requests are answered by the step's policy, never by a person; the
// agent's file and terminal requests are served by a workspace agent rooted at the checkout and
// guarded to the workspace, as the session backend serves them; models are reached through the
// proxy with the job's token, the lease the CLI agents of `codingAgent` steps get. What the agent
// reported (its AgentEvents, one JSON line each) is the step's stdout, where its transcript and
// token usage are read back from.
import { randomBytes, randomUUID } from "node:crypto";
import { Writable } from "node:stream";
import {
  type AcpLaunch,
  type AgentBackend,
  agentEnvironment,
  createAcpBackend,
} from "@deckhand/agent-backends";
import { errorMessage } from "@deckhand/errors";
import {
  chooseAuthMethod,
  type ModelProxyContext,
  type ResolvedProvider,
} from "@deckhand/providers";
import type { ProcessLauncher } from "@deckhand/sandbox";
import type {
  AcpStepPermissions,
  AgentEvent,
  PermissionOptionKind,
  StopReason,
  ToolKindSchema,
} from "@deckhand/wire";
import { type RunningAgent, startAgent } from "@deckhand/workspace-agent";
import type { z } from "zod";
import type { AcpAgentStepOptions } from "./acp-step-options.ts";
import { BatchesError } from "./batches-error.ts";

export {
  type AcpAgentStepOptions,
  type AcpStepProviders,
  acpProviderCatalogue,
  DEFAULT_ACP_STEP_PERMISSIONS,
} from "./acp-step-options.ts";

import type { ModelProviderJobLease } from "./coding-agent-step.ts";

type ToolKind = z.infer<typeof ToolKindSchema>;

/** Tool kinds that read or change files in the workspace, which `allow-edits` allows. */
const FILE_TOOL_KINDS: ReadonlySet<ToolKind> = new Set([
  "read",
  "edit",
  "delete",
  "move",
  "search",
  "think",
]);

/** The answer a policy gives a permission request about a tool of `kind`. */
export function permissionAnswer(
  policy: AcpStepPermissions,
  kind: ToolKind | undefined,
): PermissionOptionKind {
  if (policy === "allow-all") return "allow_once";
  if (policy === "allow-edits" && kind !== undefined && FILE_TOOL_KINDS.has(kind)) {
    return "allow_once";
  }
  return "reject_once";
}

export interface AcpAgentStepInput {
  provider: string;
  /** The prompt, templated with the step context. */
  prompt: string;
  permissions: AcpStepPermissions;
  /** The repository's checkout: the root of the files and processes the agent may use. */
  checkoutDirectory: string;
  /** The workspace inside it: the agent's working directory and what its files are guarded to. */
  workspaceDirectory: string;
  /** What the agent and its terminals inherit: the step's environment (runner's and its own). */
  env: Readonly<Record<string, string>>;
  /** The job's model-provider access, leased only when the agent reaches models through it. */
  lease: () => Promise<{ lease: ModelProviderJobLease; jobId: string }>;
  /** Values no output may show (the job's token, Deckhand's own secrets). */
  secrets: readonly string[];
  signal: AbortSignal;
  onOutput(stream: "stdout" | "stderr", data: Buffer): void;
  options: AcpAgentStepOptions;
  /** Starts the agent and its terminals: the run's environment policy and sandbox. */
  launcher?: ProcessLauncher;
}

export interface AcpAgentStepResult {
  exitCode: number;
  stopReason: StopReason;
}

/** A workspace agent for one step: files and processes of the checkout, then stopped. */
async function serveCheckout(
  root: string,
  env: Readonly<Record<string, string>>,
  token: string,
  launcher: ProcessLauncher | undefined,
): Promise<RunningAgent> {
  return startAgent(
    {
      host: "127.0.0.1",
      port: 0,
      root,
      token,
      maxRunningProcesses: 32,
      terminateGraceMs: 2_000,
      shutdownGraceMs: 2_000,
      logLevel: "silent",
    },
    {
      // Its requests are this step's own; the step reports what matters.
      logDestination: new Writable({ write: (_chunk, _encoding, done) => done() }),
      environment: { ...env },
      ...(launcher ? { launcher } : {}),
    },
  );
}

/** How to start the provider, pointed at the proxy when an upstream serves its agent type. */
async function resolveProvider(input: AcpAgentStepInput): Promise<{
  resolved: ResolvedProvider;
  modelProxy: { url: string; token: string; jobId: string } | null;
}> {
  const { providers, proxied } = input.options;
  const where = { projectDir: input.workspaceDirectory };
  const plain = await providers.resolve(input.provider, where);
  if (plain.transport !== "acp" || plain.executable === null) {
    throw new BatchesError(
      "coding_agent_unavailable",
      `provider "${input.provider}" is not an ACP agent; an acp step runs an ACP provider`,
    );
  }
  if (plain.agentType === null || !proxied(plain.agentType)) {
    // Like a session without an upstream for its type: the agent keeps its own login.
    return { resolved: plain, modelProxy: null };
  }
  const { lease, jobId } = await input.lease();
  const proxy: ModelProxyContext = {
    proxyUrl: `${lease.baseUrl}/${plain.agentType}`,
    token: lease.token,
    jobId,
  };
  return {
    resolved: await providers.resolve(input.provider, { ...where, proxy }),
    modelProxy: { url: proxy.proxyUrl, token: proxy.token, jobId },
  };
}

/**
 * Runs the step: resolves the provider, serves the checkout, starts the agent in the workspace,
 * sends the prompt as one turn and answers permission requests by the policy. Exit code 0 when
 * the agent ended its turn, 1 otherwise (the reason on stderr); throws only for a provider that
 * cannot be started at all.
 */
export async function runAcpAgentStep(input: AcpAgentStepInput): Promise<AcpAgentStepResult> {
  const { resolved, modelProxy } = await resolveProvider(input);
  const agentToken = randomBytes(24).toString("base64url");
  const served = await serveCheckout(
    input.checkoutDirectory,
    input.env,
    agentToken,
    input.launcher,
  );
  const line = (stream: "stdout" | "stderr", text: string) =>
    input.onOutput(stream, Buffer.from(`${text}\n`));
  const launch: AcpLaunch = {
    executable: resolved.executable!,
    args: resolved.args,
    env: resolved.env,
    unset: resolved.unset,
    inherit: input.env,
    // The whole checkout is the step's to change, as its git directory is for git to read.
    profile: {
      ...resolved.profile,
      writable: [input.checkoutDirectory, ...resolved.profile.writable],
    },
    ...(input.launcher ? { launcher: input.launcher } : {}),
  };
  let backend: AgentBackend | null = null;
  try {
    backend = createAcpBackend({
      context: {
        sessionId: randomUUID(),
        chatId: randomUUID(),
        worktreePath: input.workspaceDirectory,
        workspaceAgent: { url: served.url, token: agentToken },
        modelProxy,
        resumeSessionId: null,
      },
      launch,
      agent: input.provider,
      serveFileReads: resolved.serveFileReads,
      timeouts: {
        initializeMs: resolved.startTimeouts.initializeMs,
        sessionMs: resolved.startTimeouts.sessionMs,
      },
      secrets: [...input.secrets, agentToken],
      login: (methods, refusal) =>
        chooseAuthMethod({
          methods,
          env: agentEnvironment(launch),
          refusal,
          advice: resolved.loginAdvice,
          keysInEnv: resolved.agentType === null,
        }),
    });
    return await promptOnce(backend, input, line);
  } finally {
    await backend?.dispose().catch(() => {});
    await served.close();
  }
}

/** One turn: every event a JSON line on stdout, each permission request answered by policy. */
async function promptOnce(
  backend: AgentBackend,
  input: AcpAgentStepInput,
  line: (stream: "stdout" | "stderr", text: string) => void,
): Promise<AcpAgentStepResult> {
  const kinds = new Map<string, ToolKind>();
  const running = backend;
  let failure: string | null = null;
  const onEvent = async (event: AgentEvent) => {
    line("stdout", JSON.stringify(event));
    if (event.type === "tool_call") kinds.set(event.tool_call_id, event.kind);
    if (event.type === "error") failure = event.message;
    if (event.type === "permission_request") {
      const kind = event.tool_call_id === null ? undefined : kinds.get(event.tool_call_id);
      await running.respondToPermission({
        requestId: event.request_id,
        outcome: permissionAnswer(input.permissions, kind),
      });
    }
  };
  let result: { stopReason: StopReason };
  try {
    result = await backend.prompt({
      messageId: randomUUID(),
      text: input.prompt,
      onEvent,
      signal: input.signal,
    });
  } catch (error) {
    line("stderr", `${input.provider} could not run the prompt: ${errorMessage(error)}`);
    return { exitCode: 1, stopReason: "error" };
  }
  if (result.stopReason === "end_turn") return { exitCode: 0, stopReason: "end_turn" };
  line(
    "stderr",
    failure ?? `${input.provider} ended its turn with ${result.stopReason}, not end_turn`,
  );
  return { exitCode: 1, stopReason: result.stopReason };
}
