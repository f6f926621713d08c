import { join } from "node:path";
import {
  type AcpLaunch,
  type AgentBackend,
  agentEnvironment,
  createAcpBackend,
  createNativeBackend,
  FileSessionRecorder,
  type PermissionMemory,
} from "@deckhand/agent-backends";
import { chooseAuthMethod } from "@deckhand/providers";
import type { ProcessLauncher } from "@deckhand/sandbox";
import type { BackendFactory, BackendRequest } from "./session-agents.ts";

/** The model the native agent asks for unless the server's config names another. */
export const DEFAULT_NATIVE_MODEL = "gpt-5.1-codex";

export interface AgentBackendFactoryOptions {
  /** Where "always" permission answers are kept, for ACP agents and the native agent alike. */
  permissionMemory: PermissionMemory;
  /** The native agent's JSONL recordings go to `<dataDir>/recordings/<its session id>.jsonl`. */
  dataDir: string;
  /** What ACP agent processes inherit: the server's environment as its agent policy leaves it. */
  agentEnvironment?: Readonly<Record<string, string>>;
  /** Starts ACP agents: the server's environment policy and sandbox; unconfined when absent. */
  launcher?: ProcessLauncher;
  nativeModel?: string;
}

/**
 * The default backend factory: an ACP agent process for `acp` providers, Deckhand's native
 * agent for the `native` one.
 */
export function agentBackendFactory(options: AgentBackendFactoryOptions): BackendFactory {
  const recorder = new FileSessionRecorder(join(options.dataDir, "recordings"));
  return (request: BackendRequest): AgentBackend => {
    const { provider, context, agent, logger } = request;
    const log = {
      info: (message: string, fields?: Record<string, unknown>) =>
        logger.info(fields ?? {}, message),
      warn: (message: string, fields?: Record<string, unknown>) =>
        logger.warn(fields ?? {}, message),
      error: (message: string, fields?: Record<string, unknown>) =>
        logger.error(fields ?? {}, message),
    };
    if (provider.transport === "native") {
      return createNativeBackend({
        ...context,
        agent,
        permissionMemory: options.permissionMemory,
        model: options.nativeModel ?? DEFAULT_NATIVE_MODEL,
        approvalPolicy: request.approvalPolicy,
        recorder,
        logger: log,
      });
    }
    if (provider.executable === null) {
      throw new Error(`provider ${provider.id} has no command to start`);
    }
    const launch: AcpLaunch = {
      executable: provider.executable,
      args: provider.args,
      env: provider.env,
      unset: provider.unset,
      ...(options.agentEnvironment ? { inherit: options.agentEnvironment } : {}),
      profile: provider.profile,
      ...(options.launcher ? { launcher: options.launcher } : {}),
    };
    return createAcpBackend({
      context,
      agent,
      launch,
      // A login the agent's own environment serves (an API key in the provider's env) is made
      // for it, as probes do; otherwise the refusal says what the agent offers and what to set.
      login: (methods, refusal) =>
        chooseAuthMethod({
          methods,
          env: agentEnvironment(launch),
          refusal,
          advice: provider.loginAdvice,
          // An agent type the proxy serves never holds a real key.
          keysInEnv: provider.agentType === null,
        }),
      permissionMemory: options.permissionMemory,
      serveFileReads: provider.serveFileReads,
      timeouts: {
        initializeMs: provider.startTimeouts.initializeMs,
        sessionMs: provider.startTimeouts.sessionMs,
      },
      onIdleEvent: request.publishIdleEvent,
      logger: log,
    });
  };
}
