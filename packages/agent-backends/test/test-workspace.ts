import { mkdirSync, mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { gitIn } from "@deckhand/testkit";
import { type RunningAgent, resolveAgentConfig, startAgent } from "@deckhand/workspace-agent";

/** A real workspace agent on 127.0.0.1 serving a temporary root, with a worktree inside it. */
export interface TestWorkspace {
  agent: RunningAgent;
  token: string;
  /** The agent's root (symlinks resolved, as the agent reports paths). */
  root: string;
  /** `<root>/tree`: the directory backends treat as the session worktree. */
  worktree: string;
  /** Stops the agent and its processes, and deletes the root. */
  close(): Promise<void>;
}

export async function startTestWorkspace(
  prefix: string,
  options: { token?: string; gitInit?: boolean } = {},
): Promise<TestWorkspace> {
  const token = options.token ?? `${prefix}token-0123456789`;
  const root = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  const worktree = join(root, "tree");
  mkdirSync(worktree);
  if (options.gitInit) gitIn(worktree, "init", "-q");
  const quiet = new Writable({ write: (_chunk, _encoding, callback) => callback() });
  const agent = await startAgent(
    resolveAgentConfig({
      listen: "127.0.0.1:0",
      dir: root,
      token,
      logLevel: "warn",
      // Short grace periods keep interrupted-process tests quick.
      terminateGraceMs: 500,
      shutdownGraceMs: 500,
    }),
    { logDestination: quiet },
  );
  return {
    agent,
    token,
    root,
    worktree,
    close: async () => {
      await agent.close();
      rmSync(root, { recursive: true, force: true });
    },
  };
}
