import type { IncomingMessage } from "node:http";
import {
  DeckhandError,
  type ErrorCode,
  ErrorResponseSchema,
  type GitWatchFrame,
  GitWatchFrameSchema,
  WireHeader,
  WirePath,
} from "@deckhand/wire";
import WebSocket from "ws";

/**
 * The agent refused the watch (status and code from its answer) or the socket failed (status 0,
 * code `git_watch_failed`). A client-side error about another process's answer, so it carries
 * that answer's wire code rather than one of AgentError's codes, which name the agent's own
 * failures.
 */
export class GitWatchClientError extends DeckhandError<ErrorCode | "git_watch_failed"> {
  static override readonly errorName = "GitWatchClientError";

  readonly status: number;

  constructor(
    status: number,
    code: ErrorCode | "git_watch_failed",
    message: string,
    options?: { cause?: unknown },
  ) {
    super(code, message, options);
    this.status = status;
  }
}

export interface WatchGitOptions {
  /** Ends the iteration (and closes the socket) when aborted. */
  signal?: AbortSignal;
}

async function refusalOf(response: IncomingMessage): Promise<GitWatchClientError> {
  let text = "";
  for await (const chunk of response) text += String(chunk);
  let parsed: ReturnType<typeof ErrorResponseSchema.safeParse> | null = null;
  try {
    parsed = ErrorResponseSchema.safeParse(JSON.parse(text));
  } catch {
    // Not the agent's error shape: keep the status only.
  }
  const status = response.statusCode ?? 0;
  return parsed?.success
    ? new GitWatchClientError(status, parsed.data.error.code, parsed.data.error.message)
    : new GitWatchClientError(status, "git_watch_failed", `git watch refused with HTTP ${status}`);
}

/**
 * Watches a repository through a workspace agent: yields the snapshot frame, then a frame per
 * change, each validated against the wire schema. Ends when the agent closes the socket (an
 * `error` frame, if any, is yielded first); breaking out of the loop closes the socket. A refused
 * upgrade throws GitWatchClientError with the agent's status and code.
 *
 * @param baseUrl the agent, e.g. `http://127.0.0.1:7421`
 * @param token its bearer token, or null when it has none
 * @param path a directory inside the agent's root; the root itself when omitted
 */
export async function* watchGit(
  baseUrl: string,
  token: string | null,
  path?: string,
  options: WatchGitOptions = {},
): AsyncGenerator<GitWatchFrame, void, undefined> {
  const query = path === undefined ? "" : `?${new URLSearchParams({ path })}`;
  const url = `${baseUrl.replace(/\/+$/, "").replace(/^http/, "ws")}${WirePath.gitWatch}${query}`;
  const socket = new WebSocket(url, {
    headers: token === null ? {} : { [WireHeader.authorization]: `Bearer ${token}` },
  });
  const frames: GitWatchFrame[] = [];
  let ended = false;
  /** A refused upgrade's body is still being read: its error must win over the close. */
  let refusing = false;
  let failure: Error | null = null;
  let wake: (() => void) | null = null;
  const notify = () => {
    const waiting = wake;
    wake = null;
    waiting?.();
  };
  socket.on("unexpected-response", (request, response) => {
    refusing = true;
    void refusalOf(response).then((error) => {
      refusing = false;
      failure = error;
      request.destroy();
      notify();
    });
  });
  socket.on("message", (data) => {
    let json: unknown;
    try {
      json = JSON.parse(String(data));
    } catch {
      json = undefined;
    }
    const parsed = GitWatchFrameSchema.safeParse(json);
    if (parsed.success) frames.push(parsed.data);
    else {
      failure ??= new GitWatchClientError(
        0,
        "git_watch_failed",
        `the agent sent something that is not a git watch frame: ${String(data).slice(0, 200)}`,
      );
      socket.terminate();
    }
    notify();
  });
  socket.on("error", (error) => {
    failure ??= new GitWatchClientError(
      0,
      "git_watch_failed",
      `git watch socket failed: ${error.message}`,
      {
        cause: error,
      },
    );
    notify();
  });
  socket.on("close", () => {
    ended = true;
    notify();
  });
  const abort = () => {
    ended = true;
    notify();
  };
  options.signal?.addEventListener("abort", abort, { once: true });
  try {
    while (true) {
      const frame = frames.shift();
      if (frame) yield frame;
      else if (failure) throw failure;
      else if ((ended && !refusing) || options.signal?.aborted) return;
      else await new Promise<void>((resolveWait) => (wake = resolveWait));
    }
  } finally {
    options.signal?.removeEventListener("abort", abort);
    if (socket.readyState === WebSocket.CONNECTING) socket.terminate();
    else if (socket.readyState === WebSocket.OPEN) socket.close(1000);
  }
}
