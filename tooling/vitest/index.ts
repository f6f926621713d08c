import { defineProject, type UserWorkspaceConfig } from "vitest/config";

/**
 * How long a test or hook may run before it counts as hung. A deadline exists to catch a hang,
 * not to measure speed: the suite must pass on a 2-core machine kept busy by another job of the
 * same size (load 4-6 and more), where a hook that starts a server on PGlite took over 20 s.
 * Tests that wait for something wait for the condition, never for a fixed time.
 */
export const HANG_DEADLINE_MS = 90_000;

/**
 * The one vitest project configuration every package extends. Workspace packages resolve
 * through the `source` export condition to their TypeScript sources, so tests never need a
 * build first.
 */
export function deckhandProject(name: string, overrides: UserWorkspaceConfig["test"] = {}) {
  return defineProject({
    resolve: { conditions: ["source"] },
    ssr: { resolve: { conditions: ["source"], externalConditions: ["source"] } },
    test: {
      name,
      environment: "node",
      include: ["src/**/*.test.ts", "test/**/*.test.ts"],
      testTimeout: HANG_DEADLINE_MS,
      hookTimeout: HANG_DEADLINE_MS,
      ...overrides,
    },
  });
}
