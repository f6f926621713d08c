import { type watch as fsWatch, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createTempRepository, eventually, type TempRepository } from "@deckhand/testkit";
import type { GitRepositoryState } from "@deckhand/wire";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { locateRepository } from "./git-state.ts";
import { GitWatcher, openGitWatcherHandles } from "./git-watcher.ts";

describe("GitWatcher", () => {
  let repository: TempRepository;
  let watcher: GitWatcher | undefined;
  const changes: GitRepositoryState[] = [];
  const warnings: string[] = [];

  beforeEach(() => {
    repository = createTempRepository({ "README.md": "# demo\n" });
    changes.length = 0;
    warnings.length = 0;
  });

  afterEach(() => {
    watcher?.close();
    repository.remove();
    expect(openGitWatcherHandles()).toBe(0);
  });

  async function start(options: Partial<ConstructorParameters<typeof GitWatcher>[0]> = {}) {
    watcher = new GitWatcher({
      location: await locateRepository(repository.path),
      onChange: (state) => changes.push(state),
      onFatal: (error) => warnings.push(`fatal: ${error.message}`),
      onWarning: (message) => warnings.push(message),
      ...options,
    });
    return watcher.start();
  }

  it("coalesces a burst of writes into one change", async () => {
    await start({ debounceMs: 150 });
    for (let index = 0; index < 30; index += 1) {
      writeFileSync(join(repository.path, `file-${index}.txt`), String(index));
    }
    expect(await eventually(() => changes.length > 0, 3_000)).toBe(true);
    await new Promise((resolveWait) => setTimeout(resolveWait, 400));
    expect(changes).toHaveLength(1);
    expect(changes[0]!.changes).toHaveLength(30);
  });

  it("falls back to polling when file-system watches cannot be opened", async () => {
    const failingWatch = (() => {
      throw Object.assign(new Error("inotify watch limit reached"), { code: "ENOSPC" });
    }) as unknown as typeof fsWatch;
    const initial = await start({ watch: failingWatch, pollIntervalMs: 100 });
    expect(initial.changes).toEqual([]);
    expect(watcher!.mode).toBe("polling");
    expect(watcher!.watchedDirectoryCount).toBe(0);
    expect(warnings[0]).toMatch(/polling every 100 ms/);
    writeFileSync(join(repository.path, "README.md"), "# edited\n");
    expect(await eventually(() => changes.length === 1, 3_000)).toBe(true);
    expect(changes[0]!.changes[0]).toMatchObject({ path: "README.md", worktree: "modified" });
    // Polling finds nothing new: still one change.
    await new Promise((resolveWait) => setTimeout(resolveWait, 300));
    expect(changes).toHaveLength(1);
  });
});
