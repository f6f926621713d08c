import { existsSync, mkdirSync, realpathSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { ProcessLimits, WireEnv } from "@deckhand/wire";
import { afterEach, describe, expect, it } from "vitest";
import {
  CHAT_A,
  CHAT_B,
  CHAT_PARENT,
  createManager,
  eventually,
  isAlive,
  outputContaining,
  stopAll,
  temporaryDirectory,
} from "../test/support.ts";
import { chatScope } from "./chat-scope.ts";
import { ProcessManagerError } from "./process-manager-error.ts";

afterEach(stopAll);

const INTERRUPTIBLE = "trap 'echo got SIGINT; exit 7' INT; echo ready; while :; do sleep 0.2; done";

async function run(
  manager: ReturnType<typeof createManager>,
  options: Parameters<typeof manager.start>[0],
): Promise<{ output: string; exit_code: number | null }> {
  const { id } = await manager.start(options);
  expect(await manager.waitForExit(id)).toBe("exited");
  return manager.output(id);
}

async function startError(
  manager: ReturnType<typeof createManager>,
  options: Parameters<typeof manager.start>[0],
): Promise<ProcessManagerError> {
  const error = await manager.start(options).then(
    () => null,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(ProcessManagerError);
  return error as ProcessManagerError;
}

function thrown(action: () => unknown): ProcessManagerError {
  try {
    action();
  } catch (error) {
    expect(error).toBeInstanceOf(ProcessManagerError);
    return error as ProcessManagerError;
  }
  throw new Error("expected the call to throw");
}

describe("starting processes", () => {
  it("runs a foreground command to completion and keeps its output and exit code", async () => {
    const manager = createManager();
    const info = await manager.start({ command: "echo hello" });
    expect(info).toMatchObject({ command: "echo hello", background: false, running: true });
    expect(await manager.waitForExit(info.id)).toBe("exited");
    const output = manager.output(info.id);
    expect(output).toMatchObject({ output: "hello\n", running: false, exit_code: 0 });
    expect(output.truncated).toBeNull();
    const exited = manager.get(info.id);
    expect(exited.exit_code).toBe(0);
    expect(exited.signal).toBeNull();
    expect(exited.exited_at_unix).toBeGreaterThanOrEqual(exited.started_at_unix);
  });

  it("marks a background process as such and leaves it running", async () => {
    const manager = createManager();
    const { id } = await manager.start({ command: "sleep 60", background: true });
    expect(manager.get(id)).toMatchObject({ background: true, running: true });
    expect(manager.runningCount).toBe(1);
  });

  it("refuses an empty command", async () => {
    const error = await startError(createManager(), { command: "   " });
    expect(error.code).toBe("invalid_request");
    expect(error.message).toContain("command must not be empty");
  });

  it("refuses unknown fields and invalid environment names", async () => {
    const manager = createManager();
    const unknown = await startError(manager, {
      command: "true",
      shell: "bash",
    } as unknown as Parameters<typeof manager.start>[0]);
    expect(unknown.code).toBe("invalid_request");
    expect(unknown.message).toContain("shell");
    const badEnv = await startError(manager, { command: "true", env: { "A=B": "x" } });
    expect(badEnv.code).toBe("invalid_request");
    expect(badEnv.message).toBe("env.A=B: must be a valid environment variable name");
  });

  it("refuses wait_ms, since waiting in the same call is startAndWait's job", async () => {
    const manager = createManager();
    const error = await startError(manager, {
      command: "true",
      wait_ms: 1000,
    } as unknown as Parameters<typeof manager.start>[0]);
    expect(error.code).toBe("invalid_request");
    expect(error.message).toContain("wait_ms");
  });

  it("refuses a chat id that is not a UUID", async () => {
    const error = await startError(createManager(), { command: "true", chat_id: "chat-1" });
    expect(error.code).toBe("invalid_request");
  });

  it("gives every process a distinct short id", async () => {
    const manager = createManager();
    const ids = new Set<string>();
    for (let index = 0; index < 10; index++) ids.add((await manager.start({ command: "true" })).id);
    expect(ids.size).toBe(10);
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{12}$/);
  });

  it("reads stdin from /dev/null so a command waiting for input ends at once", async () => {
    const { output, exit_code } = await run(createManager(), { command: "cat; echo after" });
    expect(output).toBe("after\n");
    expect(exit_code).toBe(0);
  });
});

describe("working directory", () => {
  it("runs in the requested directory", async () => {
    const directory = temporaryDirectory();
    const { output } = await run(createManager(), { command: "pwd -P", workdir: directory });
    expect(output.trim()).toBe(directory);
  });

  it("resolves a relative workdir against the default workdir", async () => {
    const root = temporaryDirectory();
    mkdirSync(join(root, "sub"));
    const { output } = await run(createManager({ defaultWorkdir: root }), {
      command: "pwd -P",
      workdir: "sub",
    });
    expect(output.trim()).toBe(join(root, "sub"));
  });

  it("answers invalid_request for a workdir that does not exist or is a file", async () => {
    const root = temporaryDirectory();
    const manager = createManager({ defaultWorkdir: root });
    const missing = await startError(manager, { command: "true", workdir: join(root, "nope") });
    expect(missing.code).toBe("invalid_request");
    expect(missing.message).toContain(`workdir ${join(root, "nope")} does not exist`);
    expect(missing.message).toContain(`omit workdir to run in ${root}`);
    writeFileSync(join(root, "file"), "");
    const file = await startError(manager, { command: "true", workdir: "file" });
    expect(file.message).toContain("is not a directory");
    expect(manager.runningCount).toBe(0);
  });

  it("defaults to the home directory without a configured one", async () => {
    const { output } = await run(createManager(), { command: "pwd -P" });
    expect(output.trim()).toBe(realpathSync(homedir()));
  });

  it("defaults to the configured directory when it exists, the home directory otherwise", async () => {
    const root = temporaryDirectory();
    const configured = await run(createManager({ defaultWorkdir: root }), { command: "pwd -P" });
    expect(configured.output.trim()).toBe(root);
    const missing = join(root, "gone");
    expect(existsSync(missing)).toBe(false);
    const fallback = await run(createManager({ defaultWorkdir: missing }), { command: "pwd -P" });
    expect(fallback.output.trim()).toBe(realpathSync(homedir()));
  });
});

describe("environment", () => {
  const printVariable = (name: string) => `printf '%s' "$${name}"`;

  it("layers the request env over the base env", async () => {
    const manager = createManager({
      baseEnv: { ...process.env, FROM_BASE: "base", SHARED: "base" },
    });
    const { output } = await run(manager, {
      command: `${printVariable("FROM_BASE")}; ${printVariable("SHARED")}`,
      env: { SHARED: "request" },
    });
    expect(output).toBe("baserequest");
  });

  it("starts from the env hook's result", async () => {
    const manager = createManager({
      envHook: async (env) => ({ ...env, FROM_HOOK: "hooked" }),
    });
    const { output } = await run(manager, { command: printVariable("FROM_HOOK") });
    expect(output).toBe("hooked");
  });

  it("falls back to the base env and warns when the env hook throws or rejects", async () => {
    const warnings: { message: string; details: Record<string, unknown> }[] = [];
    for (const envHook of [
      () => {
        throw new Error("hook exploded");
      },
      () => Promise.reject(new Error("hook exploded")),
    ]) {
      const manager = createManager({
        baseEnv: { ...process.env, FROM_BASE: "base" },
        envHook,
        onWarning: (message, details) => warnings.push({ message, details }),
      });
      const { output, exit_code } = await run(manager, { command: printVariable("FROM_BASE") });
      expect(output).toBe("base");
      expect(exit_code).toBe(0);
    }
    expect(warnings).toHaveLength(2);
    expect(warnings[0]!.message).toContain("env hook failed");
    expect(warnings[0]!.details).toEqual({ error: "hook exploded" });
  });

  it("lets the request env override what the env hook set", async () => {
    const manager = createManager({ envHook: (env) => ({ ...env, VALUE: "hook" }) });
    const { output } = await run(manager, {
      command: printVariable("VALUE"),
      env: { VALUE: "request" },
    });
    expect(output).toBe("request");
  });

  it("injects the chat id last, over the request env", async () => {
    const manager = createManager();
    const { output } = await run(manager, {
      command: printVariable(WireEnv.chatId),
      env: { [WireEnv.chatId]: "spoofed" },
      chat_id: CHAT_A,
    });
    expect(output).toBe(CHAT_A);
  });
});

describe("listing", () => {
  it("shows a chat its own and chat-less processes, and a request without chat everything", async () => {
    const manager = createManager();
    const ofA = await manager.start({ command: "true", chat_id: CHAT_A });
    const ofB = await manager.start({ command: "true", chat_id: CHAT_B });
    const shared = await manager.start({ command: "true" });
    const ids = (scope: ReturnType<typeof chatScope>) =>
      manager
        .list(scope)
        .map((info) => info.id)
        .sort();
    expect(ids(chatScope(CHAT_A))).toEqual([ofA.id, shared.id].sort());
    expect(ids(chatScope(CHAT_B))).toEqual([ofB.id, shared.id].sort());
    expect(ids(null)).toEqual([ofA.id, ofB.id, shared.id].sort());
    expect(manager.get(ofA.id).chat_id).toBe(CHAT_A);
  });

  it("shows a sub-agent chat its ancestors' processes too", async () => {
    const manager = createManager();
    const parent = await manager.start({ command: "true", chat_id: CHAT_PARENT });
    const other = await manager.start({ command: "true", chat_id: CHAT_B });
    const scope = chatScope(CHAT_A, [CHAT_PARENT]);
    expect(manager.list(scope).map((info) => info.id)).toEqual([parent.id]);
    expect(manager.get(parent.id, scope).id).toBe(parent.id);
    expect(thrown(() => manager.get(other.id, scope)).code).toBe("not_found");
  });

  it("matches chat ids whatever the case of their hex digits", async () => {
    const manager = createManager();
    const started = await manager.start({ command: "true", chat_id: CHAT_A.toUpperCase() });
    expect(started.chat_id).toBe(CHAT_A);
    expect(manager.list(chatScope(CHAT_A.toUpperCase()))).toHaveLength(1);
  });

  it("lists the newest first and stops at the limit, ten by default", async () => {
    const manager = createManager();
    const ids: string[] = [];
    for (let index = 0; index < 12; index++) {
      const { id } = await manager.start({ command: "true" });
      await manager.waitForExit(id);
      ids.push(id);
    }
    expect(manager.list(null, { limit: 3 }).map((info) => info.id)).toEqual(
      ids.slice(-3).reverse(),
    );
    expect(manager.list(null)).toHaveLength(ProcessLimits.defaultListLimit);
  });

  it("lists running processes before exited ones", async () => {
    const manager = createManager();
    const running = await manager.start({ command: "sleep 60" });
    const exited = await manager.start({ command: "true" });
    await manager.waitForExit(exited.id);
    expect(manager.list(null).map((info) => [info.id, info.running])).toEqual([
      [running.id, true],
      [exited.id, false],
    ]);
  });

  it("refuses a limit outside 1 to the maximum", () => {
    const manager = createManager();
    for (const limit of [0, -1, 1.5, ProcessLimits.maxListLimit + 1]) {
      expect(thrown(() => manager.list(null, { limit })).code).toBe("invalid_request");
    }
    expect(manager.list(null, { limit: ProcessLimits.maxListLimit })).toEqual([]);
  });

  it("drops exited processes once they are older than reapAfterMs, on list and on get", async () => {
    let now = 1_000_000;
    const manager = createManager({ reapAfterMs: 60_000, now: () => now });
    const exited = await manager.start({ command: "true" });
    const running = await manager.start({ command: "sleep 60" });
    await manager.waitForExit(exited.id);
    now += 59_000;
    expect(manager.list(null)).toHaveLength(2);
    now += 1_000;
    expect(thrown(() => manager.get(exited.id)).code).toBe("not_found");
    expect(manager.list(null).map((info) => info.id)).toEqual([running.id]);
  });
});

describe("chat isolation", () => {
  it("reports another chat's process as not found on output, wait and signal", async () => {
    const manager = createManager();
    const { id } = await manager.start({ command: "sleep 60", chat_id: CHAT_A });
    const other = chatScope(CHAT_B);
    const unknown = thrown(() => manager.output("000000000000", other));
    for (const action of [
      () => manager.output(id, other),
      () => manager.get(id, other),
      () => manager.signal(id, other, "kill"),
      () => manager.waitForExit(id, other),
    ]) {
      const error = thrown(action);
      expect(error.code).toBe("not_found");
      // Same wording as for an id that never existed, apart from the id itself.
      expect(error.message.replace(id, "ID")).toBe(unknown.message.replace("000000000000", "ID"));
    }
    expect(manager.get(id, chatScope(CHAT_A)).running).toBe(true);
  });
});

describe("output", () => {
  it("captures stdout and stderr in one stream", async () => {
    const { output } = await run(createManager(), {
      command: "echo out; echo err >&2; echo out-again",
    });
    expect(output).toBe("out\nerr\nout-again\n");
  });

  it("keeps the exact order of stdout and stderr writes", async () => {
    const manager = createManager();
    const command =
      "i=0; while [ $i -lt 1000 ]; do echo a; echo b >&2; echo c; echo d >&2; i=$((i+1)); done";
    const info = await manager.start({ command });
    expect(info.command).toBe(command);
    expect(await manager.waitForExit(info.id)).toBe("exited");
    expect(manager.output(info.id)).toMatchObject({
      output: "a\nb\nc\nd\n".repeat(1000),
      truncated: null,
      exit_code: 0,
    });
  });

  it("captures the shell's own error for a command that does not parse", async () => {
    const { output, exit_code } = await run(createManager(), { command: "echo never; if" });
    // Wording differs between shells (dash: `/bin/sh: 1: Syntax error: ...`).
    expect(output).toMatch(/syntax error/i);
    expect(output).not.toContain("never");
    expect(exit_code).toBe(2);
  });

  it("reports a non-zero exit code", async () => {
    const { exit_code } = await run(createManager(), { command: "echo failing; exit 3" });
    expect(exit_code).toBe(3);
  });

  it("keeps several megabytes of output to a bounded head and tail and says what it cut", async () => {
    const manager = createManager();
    const totalBytes = 4 * 1024 * 1024;
    const { id } = await manager.start({
      command: `echo FIRST-LINE; yes 0123456789abcdef | head -c ${totalBytes}; echo; echo LAST-LINE`,
    });
    expect(await manager.waitForExit(id)).toBe("exited");
    const { output, truncated, next_cursor } = manager.output(id);
    expect(truncated).not.toBeNull();
    expect(truncated!.strategy).toBe("head_tail");
    expect(truncated!.original_bytes).toBe(totalBytes + "FIRST-LINE\n\nLAST-LINE\n".length);
    expect(truncated!.omitted_bytes).toBeGreaterThan(totalBytes - 128 * 1024);
    expect(output.length).toBeLessThan(128 * 1024);
    expect(output.startsWith("FIRST-LINE\n")).toBe(true);
    expect(output.endsWith("LAST-LINE\n")).toBe(true);
    expect(output).toContain(String(truncated!.omitted_bytes));
    expect(next_cursor).toBe(truncated!.original_bytes);
  });

  it("answers only what is new after a cursor", async () => {
    const directory = temporaryDirectory();
    const flag = join(directory, "go");
    const manager = createManager();
    const { id } = await manager.start({
      command: `echo one; while [ ! -e '${flag}' ]; do sleep 0.05; done; echo two`,
    });
    await outputContaining(manager, id, "one\n");
    const first = manager.output(id);
    expect(first.next_cursor).toBe(4);
    expect(manager.output(id, null, { cursor: first.next_cursor })).toMatchObject({
      output: "",
      next_cursor: 4,
      missed_bytes: 0,
      truncated: null,
    });
    writeFileSync(flag, "");
    await manager.waitForExit(id);
    const second = manager.output(id, null, { cursor: first.next_cursor });
    expect(second).toMatchObject({ output: "two\n", next_cursor: 8, running: false, exit_code: 0 });
  });

  it("refuses a cursor past the end of the output", async () => {
    const manager = createManager();
    const { id } = await manager.start({ command: "echo hi" });
    await manager.waitForExit(id);
    expect(thrown(() => manager.output(id, null, { cursor: 1000 })).code).toBe("invalid_request");
  });

  it("reports a process whose backgrounded grandchild holds the pipe as exited after pipeDrainMs", async () => {
    const manager = createManager({ pipeDrainMs: 300 });
    const { id } = await manager.start({ command: "echo parent; sleep 120 & echo $!" });
    expect(await manager.waitForExit(id, null, { timeoutMs: 15_000 })).toBe("exited");
    const { output, running, exit_code } = manager.output(id);
    expect(running).toBe(false);
    expect(exit_code).toBe(0);
    const grandchild = Number.parseInt(output.split("\n")[1]!, 10);
    expect(output).toContain("parent\n");
    // The grandchild lives on in the process group until shutdown (afterEach) stops it.
    expect(isAlive(grandchild)).toBe(true);
    await manager.shutdown({ graceMs: 200 });
    expect(await eventually(() => !isAlive(grandchild))).toBe(true);
  });
});

describe("waiting", () => {
  it("waits for a running process to exit", async () => {
    const manager = createManager();
    const { id } = await manager.start({ command: "sleep 0.3; echo done" });
    expect(await manager.waitForExit(id)).toBe("exited");
    expect(manager.output(id)).toMatchObject({ output: "done\n", running: false, exit_code: 0 });
  });

  it("returns at once for a process that has already exited", async () => {
    const manager = createManager();
    const { id } = await manager.start({ command: "true" });
    await manager.waitForExit(id);
    expect(await manager.waitForExit(id, null, { timeoutMs: 0 })).toBe("exited");
  });

  it("times out at the wait cap and leaves the process running", async () => {
    const manager = createManager({ waitCapMs: 300 });
    const { id } = await manager.start({ command: "sleep 60" });
    expect(await manager.waitForExit(id, null, { timeoutMs: 60_000 })).toBe("timed_out");
    expect(manager.get(id).running).toBe(true);
    expect(manager.waitingCount).toBe(0);
  });

  it("wakes every concurrent waiter when the process exits", async () => {
    const manager = createManager();
    const { id } = await manager.start({ command: "sleep 60" });
    const waits = Array.from({ length: 20 }, () => manager.waitForExit(id));
    expect(manager.waitingCount).toBe(20);
    manager.signal(id, null, "kill");
    expect(await Promise.all(waits)).toEqual(Array(20).fill("exited"));
    expect(manager.waitingCount).toBe(0);
  });

  it("ends a wait when its signal aborts and releases the waiter", async () => {
    const manager = createManager();
    const { id } = await manager.start({ command: "sleep 60" });
    const controller = new AbortController();
    const wait = manager.waitForExit(id, null, { signal: controller.signal });
    expect(manager.waitingCount).toBe(1);
    controller.abort();
    expect(await wait).toBe("aborted");
    expect(manager.waitingCount).toBe(0);
  });

  it("wakes an output waiter on new output, before the process exits", async () => {
    const manager = createManager();
    const directory = temporaryDirectory();
    const flag = join(directory, "go");
    const { id } = await manager.start({
      command: `while [ ! -e '${flag}' ]; do sleep 0.05; done; echo news; sleep 60`,
    });
    const wait = manager.waitForOutput(id, null, { cursor: 0 });
    writeFileSync(flag, "");
    expect(await wait).toBe("changed");
    expect(manager.output(id, null, { cursor: 0 })).toMatchObject({
      output: "news\n",
      running: true,
    });
    expect(await manager.waitForOutput(id, null, { cursor: 0 })).toBe("changed");
    manager.signal(id, null, "kill");
    expect(await manager.waitForOutput(id, null, { cursor: 5 })).toBe("exited");
  });
});

describe("starting and waiting in one call", () => {
  it("answers the final output of a process that exits within the wait", async () => {
    const manager = createManager();
    const { info, output } = await manager.startAndWait(
      { command: "echo done; exit 5", chat_id: CHAT_A },
      { timeoutMs: 10_000 },
    );
    expect(info).toMatchObject({ command: "echo done; exit 5", chat_id: CHAT_A });
    expect(output).toEqual({
      output: "done\n",
      truncated: null,
      running: false,
      exit_code: 5,
      group_running: false,
      next_cursor: 5,
      missed_bytes: 0,
      timed_out: false,
    });
  });

  it("says timed_out when the wait ends first, and leaves the process running", async () => {
    const manager = createManager({ waitCapMs: 200 });
    const { info, output } = await manager.startAndWait(
      { command: "sleep 60" },
      { timeoutMs: 60_000 },
    );
    expect(output).toMatchObject({ running: true, exit_code: null, timed_out: true });
    expect(manager.get(info.id).running).toBe(true);
    expect(manager.waitingCount).toBe(0);
  });

  it("ends the wait when its signal aborts, without timed_out", async () => {
    const manager = createManager();
    const controller = new AbortController();
    const result = manager.startAndWait({ command: "sleep 60" }, { signal: controller.signal });
    expect(await eventually(() => manager.waitingCount === 1)).toBe(true);
    controller.abort();
    const { info, output } = await result;
    expect(output).toMatchObject({ running: true, timed_out: false });
    expect(manager.get(info.id).running).toBe(true);
  });

  it("answers the output even when the exited process is reaped at once", async () => {
    const manager = createManager({ reapAfterMs: 0 });
    const { output } = await manager.startAndWait({ command: "echo gone" });
    expect(output).toMatchObject({ output: "gone\n", running: false, exit_code: 0 });
  });

  it("refuses an invalid request before starting anything", async () => {
    const manager = createManager();
    const error = await manager.startAndWait({ command: " " }).then(
      () => null,
      (caught: unknown) => caught,
    );
    expect(error).toMatchObject({ code: "invalid_request" });
    expect(manager.runningCount).toBe(0);
  });
});

describe("signals", () => {
  it("kills a running process: exit code 137 and signal SIGKILL", async () => {
    const manager = createManager();
    const { id } = await manager.start({ command: "sleep 60" });
    manager.signal(id, null, "kill");
    await manager.waitForExit(id);
    expect(manager.get(id)).toMatchObject({ running: false, exit_code: 137, signal: "SIGKILL" });
  });

  it("terminates a running process with SIGTERM", async () => {
    const manager = createManager();
    const { id } = await manager.start({ command: "sleep 60" });
    manager.signal(id, null, "terminate");
    await manager.waitForExit(id);
    expect(manager.get(id)).toMatchObject({ running: false, exit_code: 143 });
  });

  it("escalates terminate to SIGKILL when the group ignores SIGTERM", async () => {
    const manager = createManager({ terminateGraceMs: 300 });
    const { id } = await manager.start({ command: "trap '' TERM; echo ready; sleep 60; sleep 60" });
    await outputContaining(manager, id, "ready");
    manager.signal(id, null, "terminate");
    expect(await manager.waitForExit(id, null, { timeoutMs: 15_000 })).toBe("exited");
    expect(manager.get(id)).toMatchObject({ exit_code: 137, signal: "SIGKILL" });
  });

  it("interrupts a running process with SIGINT", async () => {
    const manager = createManager();
    // A trap, not a bare command: a shell that receives SIGINT while it is still starting its
    // command may let the command run on, exactly as with Ctrl-C in a terminal.
    const { id } = await manager.start({ command: INTERRUPTIBLE });
    await outputContaining(manager, id, "ready");
    manager.signal(id, null, "interrupt");
    await manager.waitForExit(id);
    expect(manager.output(id)).toMatchObject({ output: "ready\ngot SIGINT\n", exit_code: 7 });
  });

  it("signals the whole process group, leaving no descendant alive", async () => {
    const manager = createManager();
    const { id } = await manager.start({
      command: "sleep 300 & echo $!; sleep 300 & echo $!; wait",
    });
    let pids: number[] = [];
    await eventually(() => {
      pids = manager
        .output(id)
        .output.split("\n")
        .filter(Boolean)
        .map((line) => Number.parseInt(line, 10));
      return pids.length === 2;
    });
    expect(pids).toHaveLength(2);
    for (const pid of pids) expect(isAlive(pid)).toBe(true);
    manager.signal(id, null, "kill");
    await manager.waitForExit(id);
    expect(await eventually(() => pids.every((pid) => !isAlive(pid)))).toBe(true);
  });

  it("answers conflict for a process that has already exited with nothing left in its group, naming its exit code", async () => {
    const manager = createManager();
    const { id } = await manager.start({ command: "exit 4" });
    await manager.waitForExit(id);
    const error = thrown(() => manager.signal(id, null, "kill"));
    expect(error.code).toBe("conflict");
    expect(error.message).toBe(
      `process ${id} has already exited (exit code 4) and nothing it started is left in its process group`,
    );
  });

  it("answers not_found for an unknown id", () => {
    expect(thrown(() => createManager().signal("nope", null, "kill")).code).toBe("not_found");
  });
});

/** Starts a command that prints one pid per line, and answers those pids once all are printed. */
async function startPrinting(
  manager: ReturnType<typeof createManager>,
  command: string,
  count: number,
): Promise<{ id: string; pids: number[] }> {
  const { id } = await manager.start({ command });
  let pids: number[] = [];
  const printed = await eventually(() => {
    pids = manager
      .output(id)
      .output.split("\n")
      .filter((line) => /^\d+$/.test(line))
      .map((line) => Number.parseInt(line, 10));
    return pids.length === count;
  });
  if (!printed) throw new Error(`process ${id} printed ${pids.length} of ${count} pids`);
  return { id, pids };
}

describe("process groups that outlive their command", () => {
  it("lets kill reach the background jobs an interrupted shell left behind", async () => {
    const manager = createManager();
    // A non-interactive shell starts its background jobs with SIGINT ignored, so an interrupt
    // ends the shell and leaves every sleep running in the group.
    const { id, pids } = await startPrinting(
      manager,
      "for i in $(seq 20); do sleep 60 & echo $!; done; wait",
      20,
    );
    manager.signal(id, null, "interrupt");
    expect(await manager.waitForExit(id, null, { timeoutMs: 15_000 })).toBe("exited");
    expect(manager.get(id)).toMatchObject({ running: false, exit_code: 130, group_running: true });
    expect(manager.output(id)).toMatchObject({ running: false, group_running: true });
    expect(pids.every(isAlive)).toBe(true);

    manager.signal(id, null, "kill");
    expect(await eventually(() => pids.every((pid) => !isAlive(pid)))).toBe(true);
  });

  it("signals a backgrounded command whose shell has already exited", async () => {
    const manager = createManager();
    const { id, pids } = await startPrinting(manager, "sleep 60 & echo $!", 1);
    expect(await manager.waitForExit(id, null, { timeoutMs: 15_000 })).toBe("exited");
    expect(manager.list(null)[0]).toMatchObject({ id, exit_code: 0, group_running: true });
    expect(isAlive(pids[0]!)).toBe(true);

    manager.signal(id, null, "terminate");
    expect(await eventually(() => !isAlive(pids[0]!))).toBe(true);
  });

  it("answers conflict only once the whole group is gone, and then reports group_running false", async () => {
    const manager = createManager();
    const { id, pids } = await startPrinting(manager, "sleep 60 & echo $!", 1);
    await manager.waitForExit(id, null, { timeoutMs: 15_000 });
    manager.signal(id, null, "kill");
    // Killed members linger as zombies until init reaps them, and still count as the group.
    expect(await eventually(() => !manager.get(id).group_running)).toBe(true);
    expect(isAlive(pids[0]!)).toBe(false);
    expect(manager.output(id).group_running).toBe(false);
    const error = thrown(() => manager.signal(id, null, "kill"));
    expect(error.code).toBe("conflict");
    expect(error.message).toBe(
      `process ${id} has already exited (exit code 0) and nothing it started is left in its process group`,
    );
  });

  it("escalates terminate to SIGKILL for a group whose shell has already exited", async () => {
    const manager = createManager({ terminateGraceMs: 1_000 });
    // An ignored signal stays ignored across exec: the subshell and its sleep both shrug off SIGTERM.
    const { id, pids } = await startPrinting(manager, "(trap '' TERM; sleep 60) & echo $!", 1);
    await manager.waitForExit(id, null, { timeoutMs: 15_000 });
    manager.signal(id, null, "terminate");
    await new Promise((resolveDelay) => setTimeout(resolveDelay, 100));
    expect(isAlive(pids[0]!)).toBe(true);
    expect(await eventually(() => !manager.get(id).group_running)).toBe(true);
  });

  it("reports group_running true while the command itself runs", async () => {
    const manager = createManager();
    const { id } = await manager.start({ command: "sleep 60" });
    expect(manager.get(id)).toMatchObject({ running: true, group_running: true });
    expect(manager.output(id)).toMatchObject({ running: true, group_running: true });
  });

  it("keeps an exited process listed while its group runs, and reaps it reapAfterMs after the group ended", async () => {
    let now = 1_000_000;
    const manager = createManager({ reapAfterMs: 60_000, now: () => now });
    const { id } = await startPrinting(manager, "sleep 60 & echo $!", 1);
    await manager.waitForExit(id, null, { timeoutMs: 15_000 });
    now += 10 * 60_000;
    expect(manager.list(null).map((info) => info.id)).toEqual([id]);
    manager.signal(id, null, "kill");
    expect(await eventually(() => !manager.get(id).group_running)).toBe(true);
    now += 59_000;
    expect(manager.get(id).group_running).toBe(false);
    now += 1_000;
    expect(thrown(() => manager.get(id)).code).toBe("not_found");
  });

  it("gives a group whose shell exited the grace to stop on SIGTERM at shutdown", async () => {
    const manager = createManager();
    const { id, pids } = await startPrinting(
      manager,
      "sleep 60 & echo $!; (trap '' TERM; sleep 60) & echo $!",
      2,
    );
    await manager.waitForExit(id, null, { timeoutMs: 15_000 });
    const shutdown = manager.shutdown({ graceMs: 3_000 });
    // SIGTERM ends the plain sleep at once; the one ignoring it waits for the SIGKILL after the grace.
    expect(await eventually(() => !isAlive(pids[0]!), { timeoutMs: 2_000 })).toBe(true);
    expect(isAlive(pids[1]!)).toBe(true);
    await shutdown;
    expect(await eventually(() => !isAlive(pids[1]!))).toBe(true);
  });
});

describe("limits and shutdown", () => {
  it("refuses to start more than maxRunning processes", async () => {
    const manager = createManager({ maxRunning: 2 });
    await manager.start({ command: "sleep 60" });
    const second = await manager.start({ command: "sleep 60" });
    const error = await startError(manager, { command: "true" });
    expect(error.code).toBe("too_many_processes");
    expect(error.message).toContain("2 processes are running");
    manager.signal(second.id, null, "kill");
    await manager.waitForExit(second.id);
    await expect(manager.start({ command: "true" })).resolves.toMatchObject({ running: true });
  });

  it("holds the limit when many starts race each other", async () => {
    const manager = createManager({ maxRunning: 3 });
    const results = await Promise.allSettled(
      Array.from({ length: 8 }, () => manager.start({ command: "sleep 60" })),
    );
    expect(results.filter((result) => result.status === "fulfilled")).toHaveLength(3);
    expect(manager.runningCount).toBe(3);
  });

  it("stops every process group on shutdown, escalating to SIGKILL, and starts none after", async () => {
    const manager = createManager();
    const stubborn = await manager.start({
      command: "trap '' TERM; echo ready; sleep 60; sleep 60",
    });
    const plain = await manager.start({ command: "sleep 300 & echo $!; wait" });
    await outputContaining(manager, stubborn.id, "ready");
    const grandchild = Number.parseInt(await outputContaining(manager, plain.id, "\n"), 10);
    await manager.shutdown({ graceMs: 300 });
    expect(manager.runningCount).toBe(0);
    expect(manager.get(stubborn.id)).toMatchObject({ running: false, signal: "SIGKILL" });
    expect(manager.get(plain.id).running).toBe(false);
    expect(await eventually(() => !isAlive(grandchild))).toBe(true);
    expect((await startError(manager, { command: "true" })).code).toBe("conflict");
  });
});
