/**
 * Which agent the composer starts with: the one the link asked for, else the session's own,
 * else the first ready one, each only while it is ready.
 */
export function startingAgent(
  requested: string | null,
  sessionAgent: string | null,
  ready: readonly string[],
): string {
  for (const candidate of [requested, sessionAgent]) {
    if (candidate && ready.includes(candidate)) return candidate;
  }
  return ready[0] ?? "";
}
