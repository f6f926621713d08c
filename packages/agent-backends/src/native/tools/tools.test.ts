import {
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { ProcessClient } from "@deckhand/process-manager";
import type { StartProcessRequest } from "@deckhand/wire";
import type { RunningAgent } from "@deckhand/workspace-agent";
import { FileClient } from "@deckhand/workspace-files";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestWorkspace, type TestWorkspace } from "../../../test/test-workspace.ts";
import type { AgentBackendError } from "../../errors.ts";
import { type ExecuteResult, NON_INTERACTIVE_ENV } from "./execute-tool.ts";
import type { ReadFileResult } from "./file-tools.ts";
import type { ProcessListResult, ProcessOutputResult } from "./process-tools.ts";
import {
  assessToolCall,
  invokeTool,
  nativeTools,
  responsesTools,
  type ToolOutcome,
} from "./registry.ts";
import type { ToolContext } from "./tool-context.ts";

const TOKEN = "tools-test-token-4d1e";
const CHAT = "3f6c2b1a-9e8d-4c7b-a6f5-e4d3c2b1a098";
const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

let workspace: TestWorkspace;
let agent: RunningAgent;
let root: string;
let worktree: string;
let context: ToolContext;

beforeAll(async () => {
  workspace = await startTestWorkspace("deckhand-native-tools-", { token: TOKEN });
  ({ agent, root, worktree } = workspace);
  context = {
    processes: new ProcessClient({ baseUrl: agent.url, token: TOKEN, chatId: CHAT }),
    files: new FileClient({ baseUrl: agent.url, token: TOKEN, root: worktree }),
    chatId: CHAT,
    worktreeRoot: worktree,
    signal: new AbortController().signal,
  };
});

afterAll(async () => {
  await workspace?.close();
});

async function call(name: string, args: unknown, over: Partial<ToolContext> = {}) {
  return invokeTool(name, JSON.stringify(args), { ...context, ...over });
}

function result<T>(outcome: ToolOutcome): T {
  if (!outcome.ok) throw new Error(`tool failed: ${outcome.output}`);
  return outcome.result as T;
}

function failure(outcome: ToolOutcome): AgentBackendError {
  if (outcome.ok) throw new Error(`tool succeeded: ${outcome.output}`);
  return outcome.error;
}

const disk = (path: string) => readFileSync(join(worktree, path), "utf8");

describe("execute", () => {
  it("runs a command and reports its output, exit code and duration", async () => {
    const ok = result<ExecuteResult>(await call("execute", { command: "echo hello" }));
    expect(ok).toMatchObject({
      success: true,
      output: "hello\n",
      exit_code: 0,
      error: null,
      truncated: null,
      note: null,
      background_process_id: null,
    });
    expect(ok.wall_duration_ms).toBeGreaterThanOrEqual(0);

    const failed = result<ExecuteResult>(
      await call("execute", { command: "echo oops >&2; exit 3" }),
    );
    expect(failed).toMatchObject({ success: false, output: "oops\n", exit_code: 3 });
    expect(failed.error).toContain("3");
  });

  it("runs in the worktree, or in a workdir inside it", async () => {
    mkdirSync(join(worktree, "sub"), { recursive: true });
    const here = result<ExecuteResult>(await call("execute", { command: "pwd" }));
    expect(here.output.trim()).toBe(worktree);
    const sub = result<ExecuteResult>(await call("execute", { command: "pwd", workdir: "sub" }));
    expect(sub.output.trim()).toBe(join(worktree, "sub"));
    const outside = failure(await call("execute", { command: "pwd", workdir: ".." }));
    expect(outside.code).toBe("path_outside_worktree");
  });

  it("runs without a terminal, editor or pager: it adds exactly the non-interactive variables", async () => {
    const { output } = result<ExecuteResult>(
      await call("execute", {
        command:
          'echo "$GIT_PAGER|$PAGER|$GIT_EDITOR|$GIT_SEQUENCE_EDITOR|$EDITOR|$VISUAL|$GIT_TERMINAL_PROMPT|$NO_COLOR|$TERM"',
      }),
    );
    expect(output).toBe("cat|cat|true|true|true|true|0|1|dumb\n");

    // What the tool asks the process API for, and nothing else.
    const sent: StartProcessRequest[] = [];
    const processes = new ProcessClient({ baseUrl: agent.url, token: TOKEN, chatId: CHAT });
    const start = processes.start.bind(processes);
    processes.start = ((request: StartProcessRequest, options?: object) => {
      sent.push(request);
      return start(request, options);
    }) as ProcessClient["start"];
    const withTool = result<ExecuteResult>(
      await call("execute", { command: "env" }, { processes }),
    );
    expect(sent).toHaveLength(1);
    expect(sent[0]!.env).toEqual({
      GIT_EDITOR: "true",
      GIT_SEQUENCE_EDITOR: "true",
      EDITOR: "true",
      VISUAL: "true",
      GIT_TERMINAL_PROMPT: "0",
      NO_COLOR: "1",
      TERM: "dumb",
      PAGER: "cat",
      GIT_PAGER: "cat",
    });

    // And what the command sees beyond a process started without the tool: those, no others.
    const plain = await context.processes.run({ command: "env", workdir: worktree });
    const parse = (text: string) =>
      new Map(
        text
          .split("\n")
          .filter((line) => line.includes("="))
          .map((line) => [line.slice(0, line.indexOf("=")), line.slice(line.indexOf("=") + 1)]),
      );
    const base = parse(plain.output.output);
    const seen = parse(withTool.output);
    const added = [...seen]
      .filter(([name, value]) => base.get(name) !== value)
      .map(([name]) => name);
    expect(added.every((name) => name in NON_INTERACTIVE_ENV)).toBe(true);
    expect([...base.keys()].filter((name) => !seen.has(name))).toEqual([]);
    for (const [name, value] of Object.entries(NON_INTERACTIVE_ENV))
      expect(seen.get(name)).toBe(value);
  });

  it("promotes a trailing & to a background process the model can follow", async () => {
    const started = result<ExecuteResult>(
      await call("execute", { command: "sleep 0.2; echo 'done & dusted' &" }),
    );
    expect(started).toMatchObject({ success: true, exit_code: null, output: "" });
    const id = started.background_process_id!;
    expect(id).toBeTruthy();
    expect(started.note).toContain(`process_output with process_id "${id}"`);
    const later = result<ProcessOutputResult>(
      await call("process_output", { process_id: id, wait_timeout: "5s" }),
    );
    expect(later).toMatchObject({ running: false, exit_code: 0, output: "done & dusted\n" });

    const flagged = result<ExecuteResult>(
      await call("execute", { command: "echo bg", run_in_background: true }),
    );
    expect(flagged.background_process_id).toBeTruthy();
    const listed = result<ProcessListResult>(await call("process_list", { limit: 50 }));
    expect(listed.processes.map((info) => info.process_id)).toEqual(
      expect.arrayContaining([id, flagged.background_process_id]),
    );
  });

  it("leaves a command that outlives its timeout running and says how to follow it", async () => {
    const timedOut = result<ExecuteResult>(
      await call("execute", {
        command: "echo started; sleep 0.6; echo finished",
        timeout: "150ms",
      }),
    );
    const id = timedOut.background_process_id!;
    expect(timedOut).toMatchObject({ success: false, exit_code: null });
    // How far the shell got in 150 ms depends on the machine's load.
    expect(["", "started\n"]).toContain(timedOut.output);
    expect(timedOut.error).toContain("150 ms");
    expect(timedOut.note).toContain("still running");
    expect(timedOut.note).toContain(id);
    expect(timedOut.note).toContain("process_output");
    const finished = result<ProcessOutputResult>(
      await call("process_output", { process_id: id, wait_timeout: "5s" }),
    );
    expect(finished).toMatchObject({ running: false, exit_code: 0, output: "started\nfinished\n" });
  });

  it("caps output for the model at 32 KiB of valid UTF-8, keeping head and tail", async () => {
    const line = "é".repeat(500);
    const { output, truncated } = result<ExecuteResult>(
      await call("execute", {
        command: `echo FIRST; yes '${line}' | head -n 200; echo LAST`,
      }),
    );
    const bytes = Buffer.from(output, "utf8");
    expect(bytes.length).toBeLessThanOrEqual(32 * 1024);
    expect(strictUtf8.decode(bytes)).toBe(output);
    expect(output).not.toContain("\uFFFD");
    expect(output.startsWith("FIRST\n")).toBe(true);
    expect(output.endsWith("LAST\n")).toBe(true);
    expect(output).toMatch(/bytes omitted/);
    expect(truncated!.original_bytes).toBeGreaterThan(200 * 1000);
    expect(truncated!.omitted_bytes).toBeGreaterThan(200 * 1000 - 32 * 1024);
  });

  it("keeps the whole result the model gets within 32 KiB when the output is newlines, quotes and control characters", async () => {
    // Each line: a quote, a backslash, a tab, \x01, an escape sequence and a newline, which
    // JSON escapes to more than twice their size.
    const outcome = await call("execute", {
      command: String.raw`awk 'BEGIN { for (i = 0; i < 8000; i++) printf "\"\\\t\001\033[0m\n" }'`,
    });
    const raw = result<ExecuteResult>(outcome);
    expect(raw.output.startsWith('"\\\t\u0001\u001b[0m\n')).toBe(true);
    const bytes = Buffer.from(outcome.output, "utf8");
    expect(bytes.length).toBeLessThanOrEqual(32 * 1024);
    expect(strictUtf8.decode(bytes)).toBe(outcome.output);
    const seen = JSON.parse(outcome.output) as ExecuteResult;
    expect(seen).toMatchObject({ success: true, exit_code: 0 });
    expect(seen.output.startsWith('"\\\t\u0001\u001b[0m\n')).toBe(true);
    expect(seen.output.endsWith('"\\\t\u0001\u001b[0m\n')).toBe(true);
    expect(seen.output).toMatch(/bytes omitted/);
    expect(seen.truncated!.original_bytes).toBe(8000 * 9);
    expect(seen.truncated!.omitted_bytes).toBeGreaterThan(raw.truncated!.omitted_bytes);
  });

  it("suggests read_file for commands that only print a file", async () => {
    writeFileSync(join(worktree, "notes.txt"), "one\ntwo\n");
    const dumped = result<ExecuteResult>(await call("execute", { command: "cat notes.txt" }));
    expect(dumped.output).toBe("one\ntwo\n");
    expect(dumped.note).toContain("read_file");
    const head = result<ExecuteResult>(await call("execute", { command: "head -n 1 notes.txt" }));
    expect(head.note).toContain("read_file");
    const piped = result<ExecuteResult>(
      await call("execute", { command: "cat notes.txt | wc -l" }),
    );
    expect(piped.note).toBeNull();
  });

  it("stops a foreground command when the turn is interrupted", async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 150);
    const started = Date.now();
    await expect(
      call("execute", { command: "sleep 60; echo never" }, { signal: controller.signal }),
    ).rejects.toMatchObject({ code: "aborted" });
    // Well short of the command's 60 s, however busy the machine.
    expect(Date.now() - started).toBeLessThan(30_000);
    const { processes } = result<ProcessListResult>(await call("process_list", { limit: 100 }));
    const sleeper = processes.find((info) => info.command === "sleep 60; echo never");
    expect(sleeper).toBeDefined();
    const final = result<ProcessOutputResult>(
      await call("process_output", { process_id: sleeper!.process_id, wait_timeout: "30s" }),
    );
    expect(final.running).toBe(false);
    expect(final.output).not.toContain("never");
  });
});

describe("process tools", () => {
  it("lists, signals and reads processes", async () => {
    const started = result<ExecuteResult>(
      await call("execute", { command: "sleep 30", run_in_background: true }),
    );
    const id = started.background_process_id!;
    const snapshot = result<ProcessOutputResult>(
      await call("process_output", { process_id: id, wait_timeout: "0s" }),
    );
    expect(snapshot.running).toBe(true);
    expect(snapshot.note).toContain("still running");
    const waited = result<ProcessOutputResult>(
      await call("process_output", { process_id: id, wait_timeout: "100ms" }),
    );
    expect(waited.running).toBe(true);
    const listed = result<ProcessListResult>(await call("process_list", {}));
    expect(listed.processes.find((info) => info.process_id === id)).toMatchObject({
      command: "sleep 30",
      running: true,
      background: true,
    });
    expect(result(await call("process_signal", { process_id: id, signal: "kill" }))).toMatchObject({
      sent: true,
    });
    const ended = result<ProcessOutputResult>(
      await call("process_output", { process_id: id, wait_timeout: "5s" }),
    );
    expect(ended.running).toBe(false);

    const unknown = failure(await call("process_output", { process_id: "nope" }));
    expect(unknown.code).toBe("process_error");
    const badSignal = failure(await call("process_signal", { process_id: id, signal: "hup" }));
    expect(badSignal.code).toBe("invalid_arguments");
  });

  it("says when a command exited but what it started runs on, and process_signal stops that", async () => {
    const started = result<ExecuteResult>(
      await call("execute", { command: "sleep 30 > /dev/null 2>&1 & echo started" }),
    );
    expect(started).toMatchObject({ exit_code: 0, output: "started\n" });
    const before = result<ProcessListResult>(await call("process_list", { limit: 100 }));
    const id = before.processes.find((info) => info.command.startsWith("sleep 30 >"))!.process_id;
    const exited = result<ProcessOutputResult>(
      await call("process_output", { process_id: id, wait_timeout: "0s" }),
    );
    expect(exited).toMatchObject({ running: false, exit_code: 0, group_running: true });
    expect(exited.note).toContain("process_signal");
    const listed = result<ProcessListResult>(await call("process_list", { limit: 100 }));
    expect(listed.processes.find((info) => info.process_id === id)).toMatchObject({
      running: false,
      group_running: true,
    });
    expect(result(await call("process_signal", { process_id: id, signal: "kill" }))).toMatchObject({
      sent: true,
    });
  });
  it("waits 10 s by default and takes wait_timeout as a duration string, as Coder's tool does", async () => {
    const parameters = responsesTools().find((tool) => tool.name === "process_output")!.parameters;
    expect(parameters).toMatchObject({
      properties: { wait_timeout: { type: "string" } },
      required: ["process_id"],
    });
    const started = result<ExecuteResult>(
      await call("execute", { command: "sleep 1.5; echo woke", run_in_background: true }),
    );
    const id = started.background_process_id!;
    // Without wait_timeout it blocks until the exit (1.5 s, within the 10 s default).
    const waited = Date.now();
    const finished = result<ProcessOutputResult>(await call("process_output", { process_id: id }));
    expect(finished).toMatchObject({ running: false, exit_code: 0, output: "woke\n" });
    expect(Date.now() - waited).toBeGreaterThan(500);

    for (const wait of ["10", "5 seconds", "-1s"]) {
      const refused = failure(await call("process_output", { process_id: id, wait_timeout: wait }));
      expect(refused.code).toBe("invalid_arguments");
      expect(refused.message).toContain("'0s'");
    }
    const numeric = failure(await call("process_output", { process_id: id, wait_timeout: 5 }));
    expect(numeric.code).toBe("invalid_arguments");
  });
});

describe("file tools", () => {
  it("reads a file of quotes and newlines in pages whose result stays within 32 KiB", async () => {
    const line = `"quoted" \\ \t\u0002 ${"x".repeat(20)}`;
    const lines = Array.from({ length: 4000 }, (_, index) => `${index}:${line}`);
    writeFileSync(join(worktree, "escapes.txt"), `${lines.join("\n")}\n`);
    const read: string[] = [];
    let offset: number | null = 1;
    while (offset !== null) {
      const outcome = await call("read_file", { path: "escapes.txt", offset });
      expect(Buffer.byteLength(outcome.output)).toBeLessThanOrEqual(32 * 1024);
      const page = JSON.parse(outcome.output) as ReadFileResult;
      expect(page.offset).toBe(offset);
      read.push(...page.content.split("\n").slice(0, page.lines));
      offset = page.next_offset;
    }
    expect(read).toEqual(lines);
  });

  it("writes, reads windows of lines and edits by search and replace", async () => {
    expect(
      result(await call("write_file", { path: "docs/a.txt", content: "one\ntwo\nthree\ntwo\n" })),
    ).toMatchObject({ path: "docs/a.txt", created: true });
    const window = result<{ content: string; next_offset: number | null; note: string }>(
      await call("read_file", { path: "docs/a.txt", offset: 2, limit: 2 }),
    );
    expect(window).toMatchObject({ content: "two\nthree\n", next_offset: 4 });
    expect(window.note).toContain("offset 4");

    const ambiguous = failure(
      await call("edit_file", {
        path: "docs/a.txt",
        edits: [
          { old_string: "one", new_string: "ONE" },
          { old_string: "two", new_string: "TWO" },
        ],
      }),
    );
    expect(ambiguous.code).toBe("edit_failed");
    expect(ambiguous.message).toMatch(/occurs 2 times/);
    expect(disk("docs/a.txt")).toBe("one\ntwo\nthree\ntwo\n");

    expect(
      result(
        await call("edit_file", {
          path: "docs/a.txt",
          edits: [
            { old_string: "one", new_string: "ONE" },
            { old_string: "two", new_string: "TWO", replace_all: true },
          ],
        }),
      ),
    ).toMatchObject({ edits_applied: 2, replacements: 3 });
    expect(disk("docs/a.txt")).toBe("ONE\nTWO\nthree\nTWO\n");
  });

  it("refuses paths outside the worktree", async () => {
    writeFileSync(join(root, "outside.txt"), "secret\n");
    symlinkSync("/etc", join(worktree, "etc-link"));
    for (const [name, args] of [
      ["read_file", { path: "../outside.txt" }],
      ["read_file", { path: join(root, "outside.txt") }],
      ["write_file", { path: "../outside.txt", content: "x" }],
      ["edit_file", { path: "../outside.txt", edits: [{ old_string: "s", new_string: "t" }] }],
      ["read_file", { path: "etc-link/hostname" }],
    ] as const) {
      const refused = failure(await call(name, args));
      expect(refused.code, `${name} ${JSON.stringify(args)}`).toBe("path_outside_worktree");
    }
    expect(readFileSync(join(root, "outside.txt"), "utf8")).toBe("secret\n");
  });

  it("refuses a symlink in the worktree to a sibling directory under the agent's root", async () => {
    // The link is lexically inside the worktree and its target inside the agent's root, so only
    // the worktree passed as the file API's root catches it.
    mkdirSync(join(root, "sibling"), { recursive: true });
    writeFileSync(join(root, "sibling", "secret.txt"), "sibling secret\n");
    symlinkSync(join(root, "sibling"), join(worktree, "sib"));
    symlinkSync("../sibling/secret.txt", join(worktree, "sib-file"));
    for (const [name, args] of [
      ["read_file", { path: "sib/secret.txt" }],
      ["read_file", { path: "sib-file" }],
      ["write_file", { path: "sib/new.txt", content: "pwned" }],
      ["write_file", { path: "sib-file", content: "pwned" }],
      [
        "edit_file",
        { path: "sib/secret.txt", edits: [{ old_string: "sibling", new_string: "x" }] },
      ],
      ["apply_patch", { patch: "*** Begin Patch\n*** Add File: sib/added.txt\n+x\n*** End Patch" }],
      ["apply_patch", { patch: "*** Begin Patch\n*** Delete File: sib/secret.txt\n*** End Patch" }],
    ] as const) {
      const refused = failure(await call(name, args));
      expect(refused.code, `${name} ${JSON.stringify(args)}`).toBe("path_outside_worktree");
      expect(refused.message).not.toContain("sibling secret");
    }
    expect(readdirSync(join(root, "sibling"))).toEqual(["secret.txt"]);
    expect(readFileSync(join(root, "sibling", "secret.txt"), "utf8")).toBe("sibling secret\n");
  });
});

/** A process client that records every request and answers none: what must stay unused. */
function recordingProcesses(): { processes: ProcessClient; requests: string[] } {
  const requests: string[] = [];
  const recordingFetch: typeof fetch = async (input) => {
    requests.push(String(input));
    return new Response(JSON.stringify({ error: { code: "internal", message: "unexpected" } }), {
      status: 500,
    });
  };
  return {
    processes: new ProcessClient({
      baseUrl: agent.url,
      token: TOKEN,
      chatId: CHAT,
      fetch: recordingFetch,
    }),
    requests,
  };
}

describe("apply_patch", () => {
  it("deletes through the file API, starting no process", async () => {
    mkdirSync(join(worktree, "d"), { recursive: true });
    writeFileSync(join(worktree, "d/gone.txt"), "bye\n");
    writeFileSync(join(worktree, "d/target.txt"), "target\n");
    symlinkSync("target.txt", join(worktree, "d/link.txt"));
    const { processes, requests } = recordingProcesses();
    const patch = [
      "*** Begin Patch",
      "*** Delete File: d/gone.txt",
      "*** Delete File: d/link.txt",
      "*** End Patch",
    ].join("\n");
    const applied = result<{ summary: string }>(
      await call("apply_patch", { patch }, { processes }),
    );
    expect(applied.summary).toContain("D d/gone.txt\nD d/link.txt");
    expect(requests).toEqual([]);
    expect(existsSync(join(worktree, "d/gone.txt"))).toBe(false);
    // The link the patch named is what goes, not the file it points to.
    expect(lstatSync(join(worktree, "d/link.txt"), { throwIfNoEntry: false })).toBeUndefined();
    expect(disk("d/target.txt")).toBe("target\n");
  });

  it("adds, updates, deletes and moves files", async () => {
    mkdirSync(join(worktree, "p"), { recursive: true });
    writeFileSync(join(worktree, "p/update.ts"), "export const a = 1;\nexport const b = 2;\n");
    writeFileSync(join(worktree, "p/delete.txt"), "bye\n");
    writeFileSync(join(worktree, "p/move.txt"), "alpha\nbeta\n");
    const patch = [
      "*** Begin Patch",
      "*** Add File: p/new/added.md",
      "+# Added",
      "+",
      "*** Update File: p/update.ts",
      "@@",
      " export const a = 1;",
      "-export const b = 2;",
      "+export const b = 3;",
      "*** Delete File: p/delete.txt",
      "*** Update File: p/move.txt",
      "*** Move to: p/moved/renamed.txt",
      "@@",
      "-alpha",
      "+ALPHA",
      " beta",
      "*** End of File",
      "*** End Patch",
    ].join("\n");
    const applied = result<{ summary: string }>(await call("apply_patch", { patch }));
    expect(applied.summary).toBe(
      "Success. Updated the following files:\nA p/new/added.md\nM p/update.ts\nD p/delete.txt\nM p/move.txt -> p/moved/renamed.txt",
    );
    expect(disk("p/new/added.md")).toBe("# Added\n\n");
    expect(disk("p/update.ts")).toBe("export const a = 1;\nexport const b = 3;\n");
    expect(existsSync(join(worktree, "p/delete.txt"))).toBe(false);
    expect(existsSync(join(worktree, "p/move.txt"))).toBe(false);
    expect(disk("p/moved/renamed.txt")).toBe("ALPHA\nbeta\n");
  });

  it("changes nothing when one hunk does not match", async () => {
    mkdirSync(join(worktree, "q"), { recursive: true });
    writeFileSync(join(worktree, "q/one.txt"), "1\n2\n");
    writeFileSync(join(worktree, "q/two.txt"), "3\n4\n");
    const patch = [
      "*** Begin Patch",
      "*** Add File: q/new.txt",
      "+new",
      "*** Update File: q/one.txt",
      "@@",
      "-1",
      "+one",
      "*** Delete File: q/two.txt",
      "*** Update File: q/two.txt",
      "@@",
      "-3",
      "+three",
      "*** End Patch",
    ].join("\n");
    const refused = failure(await call("apply_patch", { patch }));
    expect(refused.code).toBe("patch_mismatch");
    expect(refused.message).toContain("No file was changed");
    const mismatch = failure(
      await call("apply_patch", {
        patch:
          "*** Begin Patch\n*** Update File: q/one.txt\n@@\n-1\n+one\n@@\n-nine\n+9\n*** End Patch",
      }),
    );
    expect(mismatch.code).toBe("patch_mismatch");
    expect(mismatch.message).toContain("hunk 2");
    expect(disk("q/one.txt")).toBe("1\n2\n");
    expect(disk("q/two.txt")).toBe("3\n4\n");
    expect(existsSync(join(worktree, "q/new.txt"))).toBe(false);

    const unparsable = failure(await call("apply_patch", { patch: "*** Begin Patch\nnonsense" }));
    expect(unparsable.code).toBe("patch_parse_failed");
  });

  it("puts back what it wrote when a later write fails", async () => {
    mkdirSync(join(worktree, "r"), { recursive: true });
    writeFileSync(join(worktree, "r/first.txt"), "first\n");
    writeFileSync(join(worktree, "r/second.txt"), "second\n");
    let writes = 0;
    const failingFetch: typeof fetch = async (input, init) => {
      if (String(input).endsWith("/write")) {
        writes += 1;
        if (writes === 3) {
          return new Response(
            JSON.stringify({ error: { code: "internal", message: "disk full" } }),
            {
              status: 500,
            },
          );
        }
      }
      return fetch(input, init);
    };
    const files = new FileClient({
      baseUrl: agent.url,
      token: TOKEN,
      fetch: failingFetch,
      root: worktree,
    });
    const patch = [
      "*** Begin Patch",
      "*** Update File: r/first.txt",
      "-first",
      "+FIRST",
      "*** Add File: r/created.txt",
      "+created",
      "*** Update File: r/second.txt",
      "-second",
      "+SECOND",
      "*** End Patch",
    ].join("\n");
    const { processes, requests } = recordingProcesses();
    const failed = failure(await call("apply_patch", { patch }, { files, processes }));
    expect(requests).toEqual([]);
    expect(failed.code).toBe("patch_apply_failed");
    expect(failed.message).toMatch(/disk full.*restored/);
    expect(disk("r/first.txt")).toBe("first\n");
    expect(disk("r/second.txt")).toBe("second\n");
    expect(existsSync(join(worktree, "r/created.txt"))).toBe(false);
  });

  it("is applied when the model runs apply_patch as a command, as Codex models do", async () => {
    const command =
      "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: s/via-shell.txt\n+shell\n*** End Patch\nEOF";
    const applied = result<ExecuteResult>(await call("execute", { command }));
    expect(applied).toMatchObject({ success: true, exit_code: 0 });
    expect(applied.output).toContain("A s/via-shell.txt");
    expect(disk("s/via-shell.txt")).toBe("shell\n");
    const refused = result<ExecuteResult>(
      await call("execute", { command: command.replace("s/via-shell.txt", "../x.txt") }),
    );
    expect(refused).toMatchObject({ success: false, exit_code: 1 });
    expect(refused.output).toContain("outside the worktree");
    expect(assessToolCall("execute", { command }, "on-request", worktree).decision).toBe(
      "auto_approve",
    );
    expect(assessToolCall("execute", { command }, "untrusted", worktree).decision).toBe("ask");
  });

  it("asks before a read-only command that reads outside the worktree (another process's environ)", () => {
    const command = `tr '\\0' '\\n' < /proc/${process.pid}/environ | tr a-z n-za-m`;
    for (const policy of ["untrusted", "on-request"] as const) {
      expect(assessToolCall("execute", { command }, policy, worktree)).toMatchObject({
        decision: "ask",
        reason: expect.stringContaining("outside the worktree"),
      });
    }
    expect(
      assessToolCall("execute", { command: "cat README.md" }, "untrusted", worktree),
    ).toMatchObject({ decision: "auto_approve" });
  });

  it("refuses absolute paths and paths outside the worktree", async () => {
    for (const path of ["../escape.txt", join(worktree, "abs.txt"), "/tmp/escape.txt"]) {
      const refused = failure(
        await call("apply_patch", {
          patch: `*** Begin Patch\n*** Add File: ${path}\n+x\n*** End Patch`,
        }),
      );
      expect(refused.code).toBe("path_outside_worktree");
    }
    expect(existsSync(join(root, "escape.txt"))).toBe(false);
    expect(existsSync(join(worktree, "abs.txt"))).toBe(false);
  });
});

describe("registry", () => {
  it("offers every tool as a Responses API function tool with a JSON Schema", () => {
    const tools = responsesTools();
    expect(tools.map((tool) => tool.name)).toEqual([
      "execute",
      "process_output",
      "process_list",
      "process_signal",
      "read_file",
      "write_file",
      "edit_file",
      "apply_patch",
    ]);
    for (const tool of tools) {
      expect(tool).toMatchObject({ type: "function", strict: false });
      expect(tool.parameters).toMatchObject({ type: "object" });
      expect(tool.parameters).not.toHaveProperty("$schema");
      expect(tool.description.length).toBeGreaterThan(20);
    }
    const execute = tools.find((tool) => tool.name === "execute")!;
    expect(execute.parameters.required).toEqual(["command"]);
    expect(Object.keys(execute.parameters.properties as object)).toEqual([
      "command",
      "timeout",
      "workdir",
      "run_in_background",
      "with_approval",
      "justification",
    ]);
    expect(nativeTools).toHaveLength(8);
  });

  it("reports unknown tools and malformed arguments to the model", async () => {
    expect(failure(await invokeTool("frobnicate", "{}", context)).code).toBe("unknown_tool");
    const notJson = failure(await invokeTool("execute", "{command:", context));
    expect(notJson.code).toBe("invalid_arguments");
    const missing = await invokeTool("execute", { timeout: "5ms" }, context);
    expect(failure(missing).code).toBe("invalid_arguments");
    expect(missing.output).toMatch(/^Error \(invalid_arguments\): .*command/s);
    for (const timeout of ["soon", "30", "11m", "0s"]) {
      const badTimeout = await invokeTool("execute", { command: "true", timeout }, context);
      expect(failure(badTimeout).code).toBe("invalid_arguments");
      expect(badTimeout.output).toContain("timeout");
    }
  });

  it("assesses tool calls against the approval policy", () => {
    const assess = (name: string, args: unknown, policy: "untrusted" | "on-request") =>
      assessToolCall(name, args, policy, worktree).decision;
    expect(assess("execute", { command: "git status" }, "untrusted")).toBe("auto_approve");
    expect(assess("execute", { command: "npm test &" }, "untrusted")).toBe("ask");
    expect(assess("read_file", { path: "a" }, "untrusted")).toBe("auto_approve");
    expect(assess("write_file", { path: "a", content: "" }, "untrusted")).toBe("ask");
    expect(assess("write_file", { path: "a", content: "" }, "on-request")).toBe("auto_approve");
    const patch = "*** Begin Patch\n*** Add File: ../x\n+x\n*** End Patch";
    expect(assess("apply_patch", { patch }, "on-request")).toBe("forbid");
    expect(assess("apply_patch", { patch: patch.replace("../x", "src/x") }, "on-request")).toBe(
      "auto_approve",
    );
  });
});
