import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { eventually, gitIn } from "@deckhand/testkit";
import {
  type GitRepositoryState,
  type GitWatchFrame,
  WireHeader,
  WirePath,
  WireSubprotocol,
} from "@deckhand/wire";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { resolveAgentConfig } from "./config.ts";
import { GitWatchClientError, watchGit } from "./git-watch-client.ts";
import { openGitWatcherHandles } from "./git-watcher.ts";
import { type RunningAgent, startAgent } from "./start-agent.ts";

const TOKEN = "git-watch-token-5d21";
const quiet = new Writable({ write: (_chunk, _encoding, callback) => callback() });

/** A running watch: frames as they arrive, a wait for one, and a way to stop it. */
interface Recording {
  frames: GitWatchFrame[];
  until(predicate: (frame: GitWatchFrame) => boolean, timeoutMs?: number): Promise<GitWatchFrame>;
  states(): GitRepositoryState[];
  stop(): Promise<void>;
  ended: Promise<void>;
}

function record(baseUrl: string, token: string | null, path?: string): Recording {
  const controller = new AbortController();
  const frames: GitWatchFrame[] = [];
  let failure: unknown = null;
  const ended = (async () => {
    try {
      for await (const frame of watchGit(baseUrl, token, path, { signal: controller.signal })) {
        frames.push(frame);
      }
    } catch (error) {
      failure = error;
    }
  })();
  const until = async (predicate: (frame: GitWatchFrame) => boolean, timeoutMs = 5_000) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = frames.find(predicate);
      if (found) return found;
      if (failure) throw failure;
      if (Date.now() > deadline) {
        throw new Error(`no matching frame; got ${JSON.stringify(frames).slice(0, 1500)}`);
      }
      await new Promise((resolveWait) => setTimeout(resolveWait, 20));
    }
  };
  return {
    frames,
    until,
    states: () => frames.flatMap((frame) => (frame.type === "error" ? [] : [frame.state])),
    stop: async () => {
      controller.abort();
      await ended;
    },
    ended,
  };
}

async function refusal(baseUrl: string, token: string | null, path?: string) {
  try {
    for await (const _frame of watchGit(baseUrl, token, path)) break;
  } catch (error) {
    if (error instanceof GitWatchClientError) return error;
    throw error;
  }
  throw new Error("the watch was not refused");
}

describe("git watch", () => {
  let root: string;
  let repo: string;
  let agent: RunningAgent;
  const git = (...args: string[]) => gitIn(repo, ...args);

  beforeAll(async () => {
    root = realpathSync(mkdtempSync(join(tmpdir(), "deckhand-git-watch-")));
    repo = join(root, "repo");
    mkdirSync(join(repo, "src"), { recursive: true });
    git("init", "--quiet", "--initial-branch=main");
    writeFileSync(join(repo, ".gitignore"), "*.log\nbuild/\n");
    writeFileSync(join(repo, "README.md"), "# demo\n");
    writeFileSync(join(repo, "src/a.ts"), "export const a = 1;\n");
    git("add", "--all");
    git("commit", "--quiet", "-m", "initial");
    agent = await startAgent(
      resolveAgentConfig({ listen: "127.0.0.1:0", dir: root, token: TOKEN, logLevel: "info" }),
      { logDestination: quiet },
    );
  });

  afterAll(async () => {
    await agent.close();
    rmSync(root, { recursive: true, force: true });
  });

  it("sends a snapshot, then a frame per change: edit, commit, branch; none when nothing changed", async () => {
    const watch = record(agent.url, TOKEN, "repo");
    try {
      const snapshot = await watch.until((frame) => frame.type === "snapshot");
      expect(watch.frames[0]).toBe(snapshot);
      expect(snapshot).toEqual({
        type: "snapshot",
        mode: "events",
        state: {
          root: repo,
          branch: "main",
          head: git("rev-parse", "HEAD"),
          upstream: null,
          changes: [],
        },
      });

      writeFileSync(join(repo, "src/a.ts"), "export const a = 2;\n");
      const edited = await watch.until(
        (frame) => frame.type === "change" && frame.state.changes.length > 0,
      );
      expect(edited.type === "change" && edited.state.changes).toEqual([
        { path: "src/a.ts", index: "unmodified", worktree: "modified", conflicted: false },
      ]);

      // Ignored files wake the watch but leave the state as it was: no frame.
      const before = watch.frames.length;
      writeFileSync(join(repo, "debug.log"), "noise\n");
      mkdirSync(join(repo, "build"), { recursive: true });
      writeFileSync(join(repo, "build/out.js"), "noise\n");
      await new Promise((resolveWait) => setTimeout(resolveWait, 600));
      expect(watch.frames.length).toBe(before);

      // A new directory is watched as soon as it appears, so a file created in it later counts.
      mkdirSync(join(repo, "docs/deep"), { recursive: true });
      await new Promise((resolveWait) => setTimeout(resolveWait, 300));
      writeFileSync(join(repo, "docs/deep/guide.md"), "# guide\n");
      await watch.until(
        (frame) =>
          frame.type === "change" &&
          frame.state.changes.some((change) => change.path === "docs/deep/guide.md"),
      );

      git("add", "--all");
      git("commit", "--quiet", "-m", "second");
      const head = git("rev-parse", "HEAD");
      const committed = await watch.until(
        (frame) => frame.type === "change" && frame.state.head === head,
      );
      expect(committed.type === "change" && committed.state.changes).toEqual([]);

      git("checkout", "--quiet", "-b", "feature");
      const switched = await watch.until(
        (frame) => frame.type === "change" && frame.state.branch === "feature",
      );
      expect(switched.type === "change" && switched.state).toMatchObject({ head, changes: [] });

      // Consecutive frames always differ: nothing is sent twice.
      const texts = watch.states().map((state) => JSON.stringify(state));
      for (let index = 1; index < texts.length; index += 1) {
        expect(texts[index]).not.toBe(texts[index - 1]);
      }
    } finally {
      await watch.stop();
    }
  });

  it("follows a linked worktree, whose HEAD and index live in the main repository's git dir", async () => {
    const linked = join(root, "linked");
    git("worktree", "add", "--quiet", linked, "-b", "linked");
    const watch = record(agent.url, TOKEN, "linked");
    try {
      const snapshot = await watch.until((frame) => frame.type === "snapshot");
      expect(snapshot.type === "snapshot" && snapshot.state).toMatchObject({
        root: linked,
        branch: "linked",
      });
      writeFileSync(join(linked, "README.md"), "# linked\n");
      gitIn(linked, "commit", "--quiet", "-am", "in the linked worktree");
      const head = gitIn(linked, "rev-parse", "HEAD");
      await watch.until(
        (frame) =>
          frame.type === "change" && frame.state.head === head && frame.state.changes.length === 0,
      );
    } finally {
      await watch.stop();
    }
  });

  it("refuses without the token, outside the root, and outside any repository, before upgrading", async () => {
    expect(await refusal(agent.url, null, "repo")).toMatchObject({
      status: 401,
      code: "unauthorized",
    });
    expect(await refusal(agent.url, "wrong", "repo")).toMatchObject({ status: 401 });
    expect(await refusal(agent.url, TOKEN, "../")).toMatchObject({
      status: 403,
      code: "path_outside_root",
    });
    expect(await refusal(agent.url, TOKEN, "/etc")).toMatchObject({ status: 403 });
    const notRepository = await refusal(agent.url, TOKEN);
    expect(notRepository).toMatchObject({ status: 404, code: "not_found" });
    expect(notRepository.message).toMatch(/is not inside a git worktree/);
    expect(await refusal(agent.url, TOKEN, "missing")).toMatchObject({
      status: 404,
      code: "file_not_found",
    });
    expect(await refusal(agent.url, TOKEN, "repo/README.md")).toMatchObject({ status: 400 });

    const plain = await fetch(`${agent.url}${WirePath.gitWatch}`, {
      headers: { [WireHeader.authorization]: `Bearer ${TOKEN}` },
    });
    expect(plain.status).toBe(426);
  });

  it("refuses a repository whose worktree extends beyond the root (a root inside a repository)", async () => {
    const inner = join(repo, "src");
    const nested = await startAgent(
      resolveAgentConfig({ listen: "127.0.0.1:0", dir: inner, token: TOKEN }),
      { logDestination: quiet },
    );
    try {
      const refused = await refusal(nested.url, TOKEN);
      expect(refused).toMatchObject({ status: 403, code: "path_outside_root" });
      expect(refused.message).toContain(
        `is in the repository ${repo}, which extends beyond the workspace root ${inner};`,
      );
    } finally {
      await nested.close();
    }
  });

  it("accepts the token as a subprotocol, answering with the git-watch protocol only", async () => {
    const socket = new WebSocket(
      `${agent.url.replace(/^http/, "ws")}${WirePath.gitWatch}?path=repo`,
      [WireSubprotocol.gitWatch, `${WireSubprotocol.bearerPrefix}${TOKEN}`],
    );
    const first = await new Promise<string>((resolveFrame, rejectFrame) => {
      socket.once("message", (data) => resolveFrame(String(data)));
      socket.once("error", rejectFrame);
    });
    expect(socket.protocol).toBe(WireSubprotocol.gitWatch);
    expect(JSON.parse(first).type).toBe("snapshot");
    const closed = new Promise((resolveClose) => socket.once("close", resolveClose));
    socket.close();
    await closed;
  });

  it("releases every file-system watch when the client goes away", async () => {
    expect(await eventually(() => agent.gitWatch.clientCount === 0, 3_000)).toBe(true);
    expect(openGitWatcherHandles()).toBe(0);
    const watch = record(agent.url, TOKEN, "repo");
    await watch.until((frame) => frame.type === "snapshot");
    expect(agent.gitWatch.clientCount).toBe(1);
    // The worktree's directories plus .git and its refs.
    expect(openGitWatcherHandles()).toBeGreaterThan(3);
    await watch.stop();
    expect(
      await eventually(
        () => agent.gitWatch.clientCount === 0 && openGitWatcherHandles() === 0,
        30_000,
      ),
    ).toBe(true);
  });

  it("closes open watches (1001) and their file-system watches when the agent shuts down", async () => {
    const second = await startAgent(
      resolveAgentConfig({ listen: "127.0.0.1:0", dir: root, token: TOKEN }),
      { logDestination: quiet },
    );
    const watch = record(second.url, TOKEN, "repo");
    await watch.until((frame) => frame.type === "snapshot");
    expect(openGitWatcherHandles()).toBeGreaterThan(0);
    await second.close();
    await watch.ended;
    expect(second.gitWatch.clientCount).toBe(0);
    expect(openGitWatcherHandles()).toBe(0);
  });

  it("sends an error frame and closes when the repository disappears", async () => {
    const doomed = join(root, "doomed");
    mkdirSync(doomed);
    gitIn(doomed, "init", "--quiet", "--initial-branch=main");
    const watch = record(agent.url, TOKEN, "doomed");
    await watch.until((frame) => frame.type === "snapshot");
    rmSync(doomed, { recursive: true, force: true });
    const error = await watch.until((frame) => frame.type === "error");
    expect(error.type === "error" && error.error.message).toMatch(/is gone/);
    await watch.ended;
    expect(await eventually(() => openGitWatcherHandles() === 0, 3_000)).toBe(true);
  });
});

describe("git watch client", () => {
  it("fails with status 0 and code git_watch_failed when no agent answers", async () => {
    // Port 1 on loopback: nothing listens there, so the connection is refused at once.
    const failed = await refusal("http://127.0.0.1:1", null);
    expect(failed).toMatchObject({ status: 0, code: "git_watch_failed" });
    expect(failed.message).toMatch(/^git watch socket failed: /);
  });
});
