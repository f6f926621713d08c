/** How long an ACP agent may take to start: each step has its own bound. */
export interface AgentStartTimeouts {
  /** From spawn to the `initialize` answer. */
  initializeMs: number;
  /** For the `session/new` (or `session/load`, `session/resume`) answer. */
  sessionMs: number;
}

/**
 * Measured on a loaded machine: opencode took 16-38 s to initialize and 15-22 s to open a
 * session, Qwen Code 17-21 s; the bounds leave room above that for a slower machine, and a
 * stuck agent is still reported within three minutes.
 */
export const DEFAULT_AGENT_START_TIMEOUTS: AgentStartTimeouts = {
  initializeMs: 90_000,
  sessionMs: 90_000,
};

/** Start timeouts for every agent, and per provider id over them. */
export interface AgentStartTimeoutSettings extends Partial<AgentStartTimeouts> {
  providers?: Readonly<Record<string, Partial<AgentStartTimeouts>>>;
}

/** The provider's own start timeouts over everyone's over the defaults. */
export function startTimeoutsFor(
  settings: AgentStartTimeoutSettings | undefined,
  id: string,
): AgentStartTimeouts {
  const own = settings?.providers?.[id];
  return {
    initializeMs:
      own?.initializeMs ?? settings?.initializeMs ?? DEFAULT_AGENT_START_TIMEOUTS.initializeMs,
    sessionMs: own?.sessionMs ?? settings?.sessionMs ?? DEFAULT_AGENT_START_TIMEOUTS.sessionMs,
  };
}
