import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { httpStatusOf } from "@deckhand/http-kit";
import {
  ErrorCodeSchema,
  type ErrorResponse,
  ProcessLimits,
  WireHeader,
  WirePath,
} from "@deckhand/wire";
import { afterEach, describe, expect, it } from "vitest";
import {
  CHAT_A,
  CHAT_B,
  CHAT_PARENT,
  createManager,
  eventually,
  isAlive,
  serveManager,
  stopAll,
  type TestServer,
  temporaryDirectory,
} from "../test/support.ts";
import { ProcessClientError } from "./process-client.ts";
import { ProcessManagerError } from "./process-manager-error.ts";
import { createProcessRouter } from "./process-router.ts";

afterEach(stopAll);

async function raw(
  server: TestServer,
  path: string,
  init: RequestInit = {},
): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${server.url}${WirePath.processes}${path}`, init);
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

function post(body: string, headers: Record<string, string> = {}): RequestInit {
  return { method: "POST", body, headers: { "Content-Type": "application/json", ...headers } };
}

async function clientError(promise: Promise<unknown>): Promise<ProcessClientError> {
  const error = await promise.then(
    () => null,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(ProcessClientError);
  return error as ProcessClientError;
}

describe("POST /start", () => {
  it("starts a process and answers its id", async () => {
    const server = await serveManager(createManager());
    const client = server.client();
    const started = await client.start({ command: "echo hello" });
    expect(started).toEqual({ id: expect.any(String), started: true });
    const exited = await client.waitForExit(started.id);
    expect(exited).toMatchObject({ output: "hello\n", running: false, exit_code: 0 });
  });

  it("starts a background process that keeps running", async () => {
    const server = await serveManager(createManager());
    const client = server.client();
    const { id } = await client.start({ command: "sleep 60", background: true });
    const { processes } = await client.list();
    expect(processes).toMatchObject([{ id, background: true, running: true }]);
  });

  it("answers 400 invalid_json for a body that is not JSON", async () => {
    const server = await serveManager(createManager());
    const { status, body } = await raw(server, "/start", post("{command:"));
    expect(status).toBe(400);
    expect((body as ErrorResponse).error.code).toBe("invalid_json");
  });

  it("answers 400 for an empty command, unknown fields and invalid env names", async () => {
    const server = await serveManager(createManager());
    for (const [request, text] of [
      [{ command: "" }, "command must not be empty"],
      [{ command: "true", timeout: 5 }, "timeout"],
      [
        { command: "true", env: { "1BAD": "x" } },
        "env.1BAD: must be a valid environment variable name",
      ],
      [{ command: "true", background: "yes" }, "background"],
    ] as const) {
      const { status, body } = await raw(server, "/start", post(JSON.stringify(request)));
      expect(status).toBe(400);
      expect((body as ErrorResponse).error.code).toBe("invalid_request");
      expect((body as ErrorResponse).error.message).toContain(text);
    }
    expect(server.manager.runningCount).toBe(0);
  });

  it("answers the output and exit code with the start when the process exits within wait_ms", async () => {
    const server = await serveManager(createManager());
    const started = await server.client({ chatId: CHAT_A }).start({
      command: "echo hello; echo oops >&2; exit 3",
      wait_ms: 10_000,
    });
    expect(started).toEqual({
      id: expect.any(String),
      started: true,
      output: {
        output: "hello\noops\n",
        truncated: null,
        running: false,
        exit_code: 3,
        group_running: false,
        next_cursor: 11,
        missed_bytes: 0,
        timed_out: false,
      },
    });
    expect(server.manager.get(started.id)).toMatchObject({ chat_id: CHAT_A, exit_code: 3 });
  });

  it("answers timed_out when the process outlives wait_ms, and leaves it running", async () => {
    const server = await serveManager(createManager());
    const client = server.client();
    const started = await client.start({ command: "echo begun; sleep 60", wait_ms: 300 });
    expect(started.output).toMatchObject({ running: true, exit_code: null, timed_out: true });
    const { processes } = await client.list();
    expect(processes).toMatchObject([{ id: started.id, running: true }]);
    const snapshot = await raw(server, "/start", post('{"command":"sleep 60","wait_ms":0}'));
    expect(snapshot.body).toMatchObject({
      started: true,
      output: { running: true, timed_out: true },
    });
  });

  it("caps wait_ms at the server's wait cap", async () => {
    const server = await serveManager(createManager({ waitCapMs: 200 }));
    const began = Date.now();
    const started = await server.client().start({ command: "sleep 60", wait_ms: 60_000 });
    expect(started.output).toMatchObject({ running: true, timed_out: true });
    expect(Date.now() - began).toBeLessThan(30_000);
  });

  it("answers 400 for a wait_ms that is not an integer of at least 0, and starts nothing", async () => {
    const server = await serveManager(createManager());
    for (const waitMs of ["-1", "1.5", '"100"', "null"]) {
      const { status, body } = await raw(
        server,
        "/start",
        post(`{"command":"sleep 60","wait_ms":${waitMs}}`),
      );
      expect(status).toBe(400);
      expect((body as ErrorResponse).error.code).toBe("invalid_request");
      expect((body as ErrorResponse).error.message).toMatch(/^wait_ms: /);
    }
    expect(server.manager.runningCount).toBe(0);
  });

  it("ends a waiting start when the client disconnects, and the process keeps running", async () => {
    const server = await serveManager(createManager());
    const client = server.client();
    const controller = new AbortController();
    const start = client.start(
      { command: "sleep 60", wait_ms: 60_000 },
      { signal: controller.signal },
    );
    expect(await eventually(() => server.manager.waitingCount === 1)).toBe(true);
    controller.abort();
    await expect(start).rejects.toThrow();
    expect(await eventually(() => server.manager.waitingCount === 0)).toBe(true);
    expect(server.manager.list(null)).toMatchObject([{ command: "sleep 60", running: true }]);
  });

  it("answers 400 naming the path for a workdir that does not exist", async () => {
    const server = await serveManager(createManager());
    const error = await clientError(
      server.client().start({ command: "true", workdir: "/definitely/not/here" }),
    );
    expect(error.status).toBe(400);
    expect(error.code).toBe("invalid_request");
    expect(error.message).toContain("workdir /definitely/not/here does not exist");
  });

  it("answers 429 too_many_processes at maxRunning", async () => {
    const server = await serveManager(createManager({ maxRunning: 1 }));
    const client = server.client();
    await client.start({ command: "sleep 60" });
    const error = await clientError(client.start({ command: "true" }));
    expect(error.status).toBe(429);
    expect(error.code).toBe("too_many_processes");
    expect(error.message).toContain("1 processes are running");
  });

  it("records the chat id from the header", async () => {
    const server = await serveManager(createManager());
    const { id } = await server.client({ chatId: CHAT_A }).start({ command: "true" });
    expect(server.manager.get(id).chat_id).toBe(CHAT_A);
  });
});

describe("chat headers", () => {
  it("refuses a malformed chat id with 400 instead of treating it as no chat", async () => {
    const server = await serveManager(createManager());
    await server.manager.start({ command: "sleep 60", chat_id: CHAT_B });
    for (const value of ["not-a-uuid", "", `${CHAT_A}x`]) {
      const { status, body } = await raw(server, "/list", {
        headers: { [WireHeader.chatId]: value },
      });
      expect(status).toBe(400);
      expect((body as ErrorResponse).error.code).toBe("invalid_request");
      expect((body as ErrorResponse).error.message).toContain(WireHeader.chatId);
    }
    const start = await raw(
      server,
      "/start",
      post('{"command":"true"}', { [WireHeader.chatId]: "x" }),
    );
    expect(start.status).toBe(400);
  });

  it("refuses malformed ancestor chat ids with 400", async () => {
    const server = await serveManager(createManager());
    for (const [chat, ancestors] of [
      [CHAT_A, "not json"],
      [CHAT_A, JSON.stringify(CHAT_B)],
      [CHAT_A, JSON.stringify(["nope"])],
      [undefined, JSON.stringify([CHAT_B])],
    ] as const) {
      const headers: Record<string, string> = { [WireHeader.ancestorChatIds]: ancestors };
      if (chat !== undefined) headers[WireHeader.chatId] = chat;
      const { status, body } = await raw(server, "/list", { headers });
      expect(status).toBe(400);
      expect((body as ErrorResponse).error.message).toContain(WireHeader.ancestorChatIds);
    }
  });

  it("lets a chat see its ancestors' processes but not other chats'", async () => {
    const server = await serveManager(createManager());
    const parent = await server.client({ chatId: CHAT_PARENT }).start({ command: "sleep 60" });
    await server.client({ chatId: CHAT_B }).start({ command: "sleep 60" });
    const child = server.client({ chatId: CHAT_A, ancestorChatIds: [CHAT_PARENT] });
    const { processes } = await child.list();
    expect(processes.map((info) => info.id)).toEqual([parent.id]);
    expect((await child.output(parent.id)).running).toBe(true);
    await child.signal(parent.id, "kill");
  });

  it("filters the list by chat and shows everything without a chat id", async () => {
    const server = await serveManager(createManager());
    const ofA = await server.client({ chatId: CHAT_A }).start({ command: "true" });
    const ofB = await server.client({ chatId: CHAT_B }).start({ command: "true" });
    const ids = async (chatId?: string) =>
      (await server.client(chatId === undefined ? {} : { chatId }).list()).processes
        .map((info) => info.id)
        .sort();
    expect(await ids(CHAT_A)).toEqual([ofA.id]);
    expect(await ids(CHAT_B)).toEqual([ofB.id]);
    expect(await ids()).toEqual([ofA.id, ofB.id].sort());
  });

  it("answers 404, never 403, for another chat's process on output and signal", async () => {
    const server = await serveManager(createManager());
    const { id } = await server.client({ chatId: CHAT_A }).start({ command: "sleep 60" });
    const intruder = server.client({ chatId: CHAT_B });
    for (const attempt of [
      intruder.output(id),
      intruder.output(id, { wait: true, timeoutMs: 10_000 }),
      intruder.signal(id, "kill"),
    ]) {
      const error = await clientError(attempt);
      expect(error.status).toBe(404);
      expect(error.code).toBe("not_found");
    }
    expect((await server.client({ chatId: CHAT_A }).output(id)).running).toBe(true);
  });
});

describe("GET /list", () => {
  it("answers running processes first, then the newest, capped at the limit", async () => {
    const server = await serveManager(createManager());
    const client = server.client();
    const exited: string[] = [];
    for (let index = 0; index < 4; index++) {
      const { id } = await client.start({ command: "true" });
      await client.waitForExit(id);
      exited.push(id);
    }
    const running = await client.start({ command: "sleep 60" });
    const { processes } = await client.list({ limit: 3 });
    expect(processes.map((info) => info.id)).toEqual([running.id, exited[3], exited[2]]);
    expect(processes[0]).toMatchObject({ running: true, exit_code: null, exited_at_unix: null });
  });

  it("answers 400 for a limit that is not an integer from 1 to the maximum", async () => {
    const server = await serveManager(createManager());
    for (const limit of ["0", "abc", "2.5", String(ProcessLimits.maxListLimit + 1)]) {
      const { status, body } = await raw(server, `/list?limit=${limit}`);
      expect(status).toBe(400);
      expect((body as ErrorResponse).error.message).toMatch(/^limit: /);
    }
    const { status } = await raw(server, "/list?other=1");
    expect(status).toBe(400);
  });
});

describe("GET /:id/output", () => {
  it("answers 404 for an unknown id", async () => {
    const server = await serveManager(createManager());
    const error = await clientError(server.client().output("nope"));
    expect(error.status).toBe(404);
    expect(error.message).toContain('no process with id "nope"');
  });

  it("blocks with wait=true until the process exits and answers its final output", async () => {
    const server = await serveManager(createManager());
    const client = server.client();
    const { id } = await client.start({ command: "sleep 0.3; echo done" });
    const answer = await client.output(id, { wait: true });
    expect(answer).toMatchObject({
      output: "done\n",
      running: false,
      exit_code: 0,
      timed_out: false,
    });
  });

  it("answers a snapshot at once unless wait is exactly true", async () => {
    const server = await serveManager(createManager());
    const { id } = await server.client().start({ command: "sleep 60" });
    for (const wait of ["1", "TRUE", "yes"]) {
      const { status, body } = await raw(server, `/${id}/output?wait=${wait}`);
      expect(status).toBe(200);
      expect(body).toMatchObject({ running: true, timed_out: false });
    }
  });

  it("answers at once for a process that has already exited", async () => {
    const server = await serveManager(createManager());
    const client = server.client();
    const { id } = await client.start({ command: "exit 2" });
    await client.waitForExit(id);
    expect(await client.output(id, { wait: true })).toMatchObject({
      running: false,
      exit_code: 2,
      timed_out: false,
    });
  });

  it("says timed_out when the wait cap ends a wait, and leaves the process running", async () => {
    const server = await serveManager(createManager({ waitCapMs: 300 }));
    const client = server.client();
    const { id } = await client.start({ command: "sleep 60" });
    const answer = await client.output(id, { wait: true, timeoutMs: 60_000 });
    expect(answer).toMatchObject({ running: true, exit_code: null, timed_out: true });
    expect((await client.list()).processes[0]).toMatchObject({ id, running: true });
    const short = await raw(server, `/${id}/output?wait=true&timeout_ms=0`);
    expect(short.body).toMatchObject({ running: true, timed_out: true });
  });

  it("wakes twenty concurrent waiters together when the process exits", async () => {
    const server = await serveManager(createManager());
    const client = server.client();
    const { id } = await client.start({ command: "sleep 60" });
    const waits = Array.from({ length: 20 }, () => client.output(id, { wait: true }));
    expect(await eventually(() => server.manager.waitingCount === 20)).toBe(true);
    await client.signal(id, "kill");
    const answers = await Promise.all(waits);
    for (const answer of answers) {
      expect(answer).toMatchObject({ running: false, exit_code: 137, timed_out: false });
    }
    expect(server.manager.waitingCount).toBe(0);
  });

  it("ends a wait when the client disconnects and releases the server-side waiter", async () => {
    const server = await serveManager(createManager());
    const client = server.client();
    const { id } = await client.start({ command: "sleep 60" });
    const controller = new AbortController();
    const wait = client.output(id, { wait: true, signal: controller.signal });
    expect(await eventually(() => server.manager.waitingCount === 1)).toBe(true);
    controller.abort();
    await expect(wait).rejects.toThrow();
    expect(await eventually(() => server.manager.waitingCount === 0)).toBe(true);
    expect(server.manager.get(id).running).toBe(true);
  });

  it("answers only new output after a cursor, and with wait=true wakes on new output", async () => {
    const server = await serveManager(createManager());
    const client = server.client();
    const flag = join(temporaryDirectory(), "go");
    const { id } = await client.start({
      command: `echo one; while [ ! -e '${flag}' ]; do sleep 0.05; done; echo two; sleep 60`,
    });
    let first = await client.output(id);
    for (let attempt = 0; attempt < 400 && first.next_cursor === 0; attempt++) {
      await new Promise((resolveDelay) => setTimeout(resolveDelay, 25));
      first = await client.output(id);
    }
    expect(first).toMatchObject({ output: "one\n", next_cursor: 4 });
    const next = client.output(id, { wait: true, cursor: first.next_cursor });
    expect(await eventually(() => server.manager.waitingCount === 1)).toBe(true);
    writeFileSync(flag, "");
    expect(await next).toMatchObject({
      output: "two\n",
      running: true,
      truncated: null,
      missed_bytes: 0,
      timed_out: false,
      next_cursor: 8,
    });
    const idle = await client.output(id, { wait: true, cursor: 8, timeoutMs: 200 });
    expect(idle).toMatchObject({ output: "", running: true, timed_out: true });
  });

  it("answers 400 for a malformed cursor or timeout", async () => {
    const server = await serveManager(createManager());
    const { id } = await server.client().start({ command: "true" });
    for (const query of ["cursor=-1", "cursor=abc", "timeout_ms=-5", "cursor=999999"]) {
      const { status } = await raw(server, `/${id}/output?${query}`);
      expect(status).toBe(400);
    }
  });
});

describe("POST /:id/signal", () => {
  it("kills, terminates and interrupts running processes", async () => {
    const server = await serveManager(createManager());
    const client = server.client();
    const killed = await client.start({ command: "sleep 60" });
    expect(await client.signal(killed.id, "kill")).toEqual({ id: killed.id, signal: "kill" });
    expect(await client.waitForExit(killed.id)).toMatchObject({ exit_code: 137 });
    const terminated = await client.start({ command: "sleep 60" });
    await client.signal(terminated.id, "terminate");
    expect(await client.waitForExit(terminated.id)).toMatchObject({ exit_code: 143 });
    const interrupted = await client.start({
      command: "trap 'echo got SIGINT; exit 7' INT; echo ready; while :; do sleep 0.2; done",
    });
    expect(await eventually(async () => (await client.output(interrupted.id)).output !== "")).toBe(
      true,
    );
    await client.signal(interrupted.id, "interrupt");
    expect(await client.waitForExit(interrupted.id)).toMatchObject({
      output: "ready\ngot SIGINT\n",
      exit_code: 7,
    });
  });

  it("answers 409 for a process that has already exited", async () => {
    const server = await serveManager(createManager());
    const client = server.client();
    const { id } = await client.start({ command: "exit 1" });
    await client.waitForExit(id);
    const error = await clientError(client.signal(id, "kill"));
    expect(error.status).toBe(409);
    expect(error.code).toBe("conflict");
    expect(error.message).toBe(
      `process ${id} has already exited (exit code 1) and nothing it started is left in its process group`,
    );
  });

  it("answers 200 to kill while background jobs of an interrupted shell live, and 409 once they are gone", async () => {
    const server = await serveManager(createManager());
    const client = server.client();
    const { id } = await client.start({
      command: "for i in $(seq 20); do sleep 60 & echo $!; done; wait",
    });
    let pids: number[] = [];
    expect(
      await eventually(async () => {
        pids = (await client.output(id)).output.split("\n").filter(Boolean).map(Number);
        return pids.length === 20;
      }),
    ).toBe(true);
    expect(await client.signal(id, "interrupt")).toEqual({ id, signal: "interrupt" });
    expect(await client.waitForExit(id)).toMatchObject({
      running: false,
      exit_code: 130,
      group_running: true,
    });
    expect((await client.list()).processes).toMatchObject([{ id, group_running: true }]);

    const killed = await raw(server, `/${id}/signal`, post('{"signal":"kill"}'));
    expect(killed).toEqual({ status: 200, body: { id, signal: "kill" } });
    expect(await eventually(() => pids.every((pid) => !isAlive(pid)))).toBe(true);
    expect(await eventually(async () => (await client.output(id)).group_running === false)).toBe(
      true,
    );
    const again = await raw(server, `/${id}/signal`, post('{"signal":"kill"}'));
    expect(again.status).toBe(409);
    expect((again.body as ErrorResponse).error.code).toBe("conflict");
  });

  it("answers 400 for an unknown or missing signal and 404 for an unknown id", async () => {
    const server = await serveManager(createManager());
    const { id } = await server.client().start({ command: "sleep 60" });
    for (const body of ['{"signal":"hup"}', '{"signal":""}', "{}"]) {
      const answer = await raw(server, `/${id}/signal`, post(body));
      expect(answer.status).toBe(400);
      expect((answer.body as ErrorResponse).error.message).toContain("signal");
    }
    const unknown = await raw(server, "/nope/signal", post('{"signal":"kill"}'));
    expect(unknown.status).toBe(404);
  });
});

describe("ProcessClient", () => {
  it("sends the bearer token and chat headers", async () => {
    const server = await serveManager(createManager());
    const seen: Headers[] = [];
    const client = server.client({
      token: "secret",
      chatId: CHAT_A,
      ancestorChatIds: [CHAT_PARENT],
      fetch: (input, init) => {
        seen.push(new Headers(init?.headers));
        return fetch(input, init);
      },
    });
    await client.list();
    expect(seen[0]!.get(WireHeader.authorization)).toBe("Bearer secret");
    expect(seen[0]!.get(WireHeader.chatId)).toBe(CHAT_A);
    expect(JSON.parse(seen[0]!.get(WireHeader.ancestorChatIds)!)).toEqual([CHAT_PARENT]);
  });

  it("waits across several capped waits until the process exits", async () => {
    const server = await serveManager(createManager({ waitCapMs: 150 }));
    const client = server.client();
    const { id } = await client.start({ command: "sleep 1; echo finally" });
    expect(await client.waitForExit(id)).toMatchObject({ output: "finally\n", running: false });
  });

  it("gives up waiting after its own timeout and says the process still runs", async () => {
    const server = await serveManager(createManager());
    const client = server.client();
    const { id } = await client.start({ command: "sleep 60" });
    expect(await client.waitForExit(id, { timeoutMs: 200 })).toMatchObject({
      running: true,
      timed_out: true,
    });
  });

  it("runs a command to completion in one request", async () => {
    const server = await serveManager(createManager());
    const requests: string[] = [];
    const client = server.client({
      fetch: (input, init) => {
        requests.push(`${init?.method} ${new URL(String(input)).pathname}`);
        return fetch(input, init);
      },
    });
    const result = await client.run({ command: "echo hello" });
    expect(result).toMatchObject({
      started: true,
      output: { output: "hello\n", running: false, exit_code: 0, timed_out: false },
    });
    expect(requests).toEqual([`POST ${WirePath.processes}/start`]);
  });

  it("runs a command past the agent's wait cap by waiting on in more requests", async () => {
    const server = await serveManager(createManager({ waitCapMs: 150 }));
    const result = await server.client().run({ command: "sleep 1; echo finally" });
    expect(result.output).toMatchObject({ output: "finally\n", running: false, exit_code: 0 });
  });

  it("gives up running after its own timeout and says the process still runs", async () => {
    const server = await serveManager(createManager());
    const client = server.client();
    const result = await client.run({ command: "sleep 60" }, { timeoutMs: 200 });
    expect(result.output).toMatchObject({ running: true, timed_out: true });
    expect((await client.output(result.id)).running).toBe(true);
  });

  it("holds a waiting start to maxWaitMs and refuses an answer without the output", async () => {
    const server = await serveManager(createManager());
    const bodies: unknown[] = [];
    const client = server.client({
      maxWaitMs: 100,
      fetch: (input, init) => {
        bodies.push(JSON.parse(String(init?.body)));
        return fetch(input, init);
      },
    });
    const started = await client.start({ command: "sleep 60", wait_ms: 60_000 });
    expect(bodies).toEqual([{ command: "sleep 60", wait_ms: 100 }]);
    expect(started.output.timed_out).toBe(true);
    // An agent that ignores wait_ms answers only {id, started}.
    const ignoring = server.client({
      fetch: async () => Response.json({ id: "24cd17ab9236", started: true }),
    });
    const error = await clientError(ignoring.start({ command: "true", wait_ms: 1000 }));
    expect(error.message).toContain("does not match the process API contract: output: ");
  });

  it("raises errors that are ProcessManagerErrors with the status, code and message", async () => {
    const server = await serveManager(createManager());
    const error = await clientError(server.client().signal("nope", "kill"));
    expect(error).toBeInstanceOf(ProcessManagerError);
    expect(error).toMatchObject({ status: 404, code: "not_found" });
  });

  it("reports an unreachable agent with status 0", async () => {
    const client = (await serveManager(createManager())).client({
      fetch: () => Promise.reject(new TypeError("fetch failed")),
    });
    const error = await clientError(client.list());
    expect(error.status).toBe(0);
    expect(error.message).toContain("cannot reach the workspace agent");
  });

  it("reports an agent that does not listen with status 0", async () => {
    const server = await serveManager(createManager());
    await stopAll();
    const error = await clientError(server.client().list());
    expect(error.status).toBe(0);
    expect(error.message).toContain(`cannot reach the workspace agent at ${server.url}`);
  });

  it("refuses an answer that does not match the contract", async () => {
    const client = (await serveManager(createManager())).client({
      fetch: async () => Response.json({ processes: [{ id: 1 }] }),
    });
    const error = await clientError(client.list());
    expect(error.code).toBe("internal");
    expect(error.message).toContain("does not match the process API contract");
  });

  it("keeps the status of an error answer that is not in the error shape", async () => {
    const client = (await serveManager(createManager())).client({
      fetch: async () => new Response("bad gateway", { status: 502 }),
    });
    const error = await clientError(client.list());
    expect(error).toMatchObject({ status: 502, code: "internal" });
    expect(error.message).toContain("bad gateway");
  });
});

describe("router", () => {
  it("answers unknown routes with 404 in the error shape when used on its own", async () => {
    const response = await createProcessRouter(createManager()).request("/nope/nothing");
    expect(response.status).toBe(404);
    expect(((await response.json()) as ErrorResponse).error.code).toBe("not_found");
  });

  it("answers an unexpected failure with 500 without its text and reports it", async () => {
    const failures: unknown[] = [];
    const manager = createManager();
    manager.list = () => {
      throw new Error("secret internal detail");
    };
    const router = createProcessRouter(manager, {
      onUnexpectedError: (error) => failures.push(error),
    });
    const response = await router.request("/list");
    expect(response.status).toBe(500);
    expect(await response.text()).not.toContain("secret internal detail");
    expect(failures).toHaveLength(1);
  });

  it("answers every wire code a ProcessManagerError carries with the status map's status", async () => {
    const manager = createManager();
    const router = createProcessRouter(manager);
    for (const code of ErrorCodeSchema.options) {
      manager.list = () => {
        throw new ProcessManagerError(code, `failing with ${code}`);
      };
      const response = await router.request("/list");
      expect({ code, status: response.status }).toEqual({ code, status: httpStatusOf(code) });
      expect(((await response.json()) as ErrorResponse).error).toEqual({
        code,
        message: `failing with ${code}`,
      });
    }
  });
});
