import { eventually, isAlive, type SpawnedService, spawnService } from "@deckhand/testkit";

export type SpawnedAgent = SpawnedService;
export { eventually, isAlive };

/** Starts an agent process and resolves once it logged the address it listens on. */
export function spawnAgent(
  command: string,
  args: string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): Promise<SpawnedAgent> {
  return spawnService(command, args, { ...options, readyMessage: "workspace agent listening" });
}
