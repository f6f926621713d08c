import { defineProject, type UserWorkspaceConfig } from "vitest/config";

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
      testTimeout: 20_000,
      hookTimeout: 20_000,
      ...overrides,
    },
  });
}
