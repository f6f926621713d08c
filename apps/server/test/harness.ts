import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import type { TaskRegistry } from "@deckhand/db";
import {
  type SessionEvent,
  type SessionStreamFrame,
  SessionStreamFrameSchema,
  WireHeader,
} from "@deckhand/wire";
import WebSocket from "ws";
import { resolveServerConfig, type ServerConfig } from "../src/config.ts";
import {
  BEARER_SUBPROTOCOL_PREFIX,
  SESSION_STREAM_SUBPROTOCOL,
} from "../src/session-stream-socket.ts";
import { type RunningServer, startServer } from "../src/start-server.ts";

/** Runs cleanups in reverse order; call `run()` from afterEach/afterAll. */
export class Cleanups {
  readonly #steps: (() => Promise<void> | void)[] = [];
  add(step: () => Promise<void> | void): void {
    this.#steps.push(step);
  }
  async run(): Promise<void> {
    for (const step of this.#steps.splice(0).reverse()) await step();
  }
}

export function tempDir(cleanups: Cleanups, prefix = "deckhand-server-test-"): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  cleanups.add(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

export function gitIn(cwd: string, ...args: string[]): string {
  return execFileSync("git", args, {
    cwd,
    encoding: "utf8",
    env: {
      ...process.env,
      GIT_AUTHOR_NAME: "Test",
      GIT_AUTHOR_EMAIL: "test@example.com",
      GIT_COMMITTER_NAME: "Test",
      GIT_COMMITTER_EMAIL: "test@example.com",
    },
  }).trim();
}

/** A git repository on branch `main` with one commit holding the given files. */
export function makeRepository(
  cleanups: Cleanups,
  files: Record<string, string> = { "README.md": "# demo\n" },
): string {
  const dir = tempDir(cleanups, "deckhand-repo-");
  gitIn(dir, "init", "--quiet", "--initial-branch=main");
  for (const [path, content] of Object.entries(files)) writeFileSync(join(dir, path), content);
  gitIn(dir, "add", "--all");
  gitIn(dir, "commit", "--quiet", "-m", "initial");
  return dir;
}

export interface TestServer {
  server: RunningServer;
  config: ServerConfig;
  logs(): string;
  /** Everything the server announced on the terminal (the generated admin token). */
  announced(): string;
  /** Every response body the tests read through `api`, for redaction checks. */
  responses: string[];
  api<Body = unknown>(
    method: string,
    path: string,
    options?: { body?: unknown; token?: string | null },
  ): Promise<{ status: number; body: Body; text: string }>;
}

export async function startTestServer(
  cleanups: Cleanups,
  options: {
    dataDir: string;
    tasks?: TaskRegistry;
    config?: Partial<ServerConfig>;
    /** Bearer token `api` sends unless a call says otherwise. */
    token?: string;
  },
): Promise<TestServer> {
  const destination = new PassThrough();
  let logs = "";
  destination.on("data", (chunk: Buffer) => {
    logs += chunk.toString("utf8");
  });
  let announced = "";
  const config: ServerConfig = {
    ...resolveServerConfig(
      { listen: "127.0.0.1:0", dataDir: options.dataDir, logLevel: "debug" },
      { environment: {} },
    ),
    ...options.config,
  };
  const server = await startServer(config, {
    logDestination: destination,
    announce: (line) => {
      announced += `${line}\n`;
    },
    ...(options.tasks ? { tasks: options.tasks } : {}),
  });
  let closed = false;
  const close = server.close;
  server.close = async () => {
    if (closed) return;
    closed = true;
    await close();
  };
  cleanups.add(() => server.close());
  const responses: string[] = [];
  return {
    server,
    config,
    logs: () => logs,
    announced: () => announced,
    responses,
    async api(method, path, callOptions = {}) {
      const token = callOptions.token === undefined ? options.token : callOptions.token;
      const headers: Record<string, string> = {};
      if (token) headers[WireHeader.authorization] = `Bearer ${token}`;
      if (callOptions.body !== undefined) headers["content-type"] = "application/json";
      const response = await fetch(`${server.url}${path}`, {
        method,
        headers,
        ...(callOptions.body !== undefined ? { body: JSON.stringify(callOptions.body) } : {}),
      });
      const text = await response.text();
      responses.push(text);
      return {
        status: response.status,
        body: (text.length > 0 ? JSON.parse(text) : null) as never,
        text,
      };
    },
  };
}

/** A session-stream client that records every frame and can wait for one. */
export class StreamClient {
  readonly frames: SessionStreamFrame[] = [];
  readonly raw: string[] = [];
  readonly socket: WebSocket;
  readonly opened: Promise<void>;
  readonly closed: Promise<{ code: number }>;
  #waiters: (() => void)[] = [];

  constructor(
    baseUrl: string,
    path: string,
    options: { after?: number; token?: string; tokenAs?: "header" | "subprotocol" } = {},
  ) {
    const url = `${baseUrl.replace(/^http/, "ws")}${path}${options.after !== undefined ? `?after=${options.after}` : ""}`;
    const viaHeader = options.token && options.tokenAs !== "subprotocol";
    this.socket = new WebSocket(
      url,
      options.token && options.tokenAs === "subprotocol"
        ? [SESSION_STREAM_SUBPROTOCOL, `${BEARER_SUBPROTOCOL_PREFIX}${options.token}`]
        : [],
      viaHeader ? { headers: { [WireHeader.authorization]: `Bearer ${options.token}` } } : {},
    );
    this.opened = new Promise((resolveOpen, rejectOpen) => {
      this.socket.once("open", () => resolveOpen());
      this.socket.once("unexpected-response", (_request, response) =>
        rejectOpen(new Error(`upgrade refused with ${response.statusCode}`)),
      );
      this.socket.once("error", rejectOpen);
    });
    this.closed = new Promise((resolveClose) =>
      this.socket.once("close", (code) => resolveClose({ code })),
    );
    this.socket.on("message", (data) => {
      const text = data.toString();
      this.raw.push(text);
      this.frames.push(SessionStreamFrameSchema.parse(JSON.parse(text)));
      for (const wake of this.#waiters.splice(0)) wake();
    });
  }

  events(): SessionEvent[] {
    return this.frames.flatMap((frame) => (frame.type === "event" ? [frame.event] : []));
  }

  lastEventId(): number {
    return this.events().at(-1)?.id ?? 0;
  }

  async waitFor(predicate: (client: StreamClient) => boolean, timeoutMs = 10_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!predicate(this)) {
      const remaining = deadline - Date.now();
      if (remaining <= 0) {
        throw new Error(
          `stream wait timed out; frames: ${JSON.stringify(this.frames).slice(0, 2000)}`,
        );
      }
      await new Promise<void>((resolveWait) => {
        const timer = setTimeout(resolveWait, Math.min(remaining, 200));
        this.#waiters.push(() => {
          clearTimeout(timer);
          resolveWait();
        });
      });
    }
  }

  async close(): Promise<void> {
    if (this.socket.readyState === WebSocket.CLOSED) return;
    this.socket.close();
    await this.closed;
  }
}

export async function waitUntil(
  check: () => Promise<boolean> | boolean,
  timeoutMs = 10_000,
  what = "condition",
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolveWait) => setTimeout(resolveWait, 25));
  }
}
