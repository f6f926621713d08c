import { stat } from "node:fs/promises";
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import {
  HttpError,
  httpStatusOf,
  keepWebSocketAlive,
  refuseUpgrade,
  tokenMatches,
  upgradeBearerToken,
} from "@deckhand/http-kit";
import {
  type GitWatchFrame,
  GitWatchQuerySchema,
  WireHeader,
  WirePath,
  WireSubprotocol,
} from "@deckhand/wire";
import {
  isPathInsideRoot,
  type WorkspaceFiles,
  WorkspaceFilesError,
} from "@deckhand/workspace-files";
import type { Logger } from "pino";
import { type WebSocket, WebSocketServer } from "ws";
import { type GitRepositoryLocation, locateRepository } from "./git-state.ts";
import { GitWatcher } from "./git-watcher.ts";

export interface GitWatchSocketOptions {
  /** The agent's file API: its root is where watched paths and their repository must lie. */
  files: WorkspaceFiles;
  /** Bearer token upgrades must present; null only on loopback. */
  token: string | null;
  logger: Logger;
  debounceMs?: number;
  pollIntervalMs?: number;
  pingIntervalMs?: number;
}

/**
 * Serves `GET /api/v0/git/watch?path=<dir>` as a WebSocket (see docs/agent-api/git-watch.md).
 * Everything that can be decided before the upgrade is: a missing token, a path outside the
 * root and a directory outside any repository are answered as HTTP errors, so a client learns
 * why without opening a socket. Once open, the socket carries a snapshot, then changes, and an
 * error frame only when the watch itself cannot go on.
 */
export class GitWatchSocket {
  readonly #options: GitWatchSocketOptions;
  readonly #server = new WebSocketServer({
    noServer: true,
    // Answer with the git-watch protocol when offered, never with the one carrying the token.
    handleProtocols: (protocols) =>
      protocols.has(WireSubprotocol.gitWatch) ? WireSubprotocol.gitWatch : false,
  });
  readonly #clients = new Map<WebSocket, GitWatcher>();
  /** Upgrades still being checked; shutdown ends them too. */
  readonly #pending = new Set<Duplex>();
  #closed = false;

  constructor(options: GitWatchSocketOptions) {
    this.#options = options;
  }

  /** Open watch sockets. */
  get clientCount(): number {
    return this.#clients.size;
  }

  /** Handles an HTTP upgrade; false when the path is not the git watch (someone else's). */
  handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): boolean {
    const url = new URL(request.url ?? "/", "http://localhost");
    if (url.pathname !== WirePath.gitWatch) return false;
    socket.on("error", () => socket.destroy());
    if (this.#closed) {
      refuseUpgrade(socket, 503, "internal", "the agent is shutting down");
      return true;
    }
    this.#pending.add(socket);
    socket.once("close", () => this.#pending.delete(socket));
    void (async () => {
      const location = await this.#admit(request, url);
      if (this.#closed || socket.destroyed) {
        socket.destroy();
        return;
      }
      this.#server.handleUpgrade(request, socket, head, (client) => {
        this.#pending.delete(socket);
        this.#serve(client, location);
      });
    })().catch((error: unknown) => {
      if (HttpError.isInstance(error)) {
        this.#options.logger.info(
          { path: WirePath.gitWatch, status: error.status, code: error.code },
          "git watch refused",
        );
        refuseUpgrade(socket, error.status, error.code, error.message);
        return;
      }
      this.#options.logger.error({ err: error }, "git watch upgrade failed");
      refuseUpgrade(socket, 500, "internal", "internal error; the agent log has the details");
    });
    return true;
  }

  /** Authenticates and resolves the watched repository, or throws the HttpError it is refused with. */
  async #admit(request: IncomingMessage, url: URL): Promise<GitRepositoryLocation> {
    const { token, files } = this.#options;
    if (token !== null) {
      const presented = upgradeBearerToken(request);
      if (presented === null || !tokenMatches(token, presented)) {
        throw new HttpError(
          401,
          "unauthorized",
          `missing or wrong bearer token; send "${WireHeader.authorization}: Bearer <token>" (or offer the subprotocol "${WireSubprotocol.bearerPrefix}<token>")`,
        );
      }
    }
    const query = GitWatchQuerySchema.safeParse(Object.fromEntries(url.searchParams));
    if (!query.success) {
      throw new HttpError(
        400,
        "invalid_request",
        "path must be a non-empty directory path inside the workspace root",
      );
    }
    const requested = query.data.path ?? ".";
    let directory: string;
    try {
      directory = await files.resolve(requested);
    } catch (error) {
      if (WorkspaceFilesError.isInstance(error)) {
        // Resolving throws invalid_request, path_outside_root or internal (a file-system failure
        // on the way): the file API's statuses, except internal, which has always been 400 here.
        throw new HttpError(
          error.code === "internal" ? 400 : httpStatusOf(error.code),
          error.code,
          error.message,
        );
      }
      throw error;
    }
    const stats = await stat(directory).catch(() => null);
    if (stats === null) {
      throw new HttpError(
        404,
        "file_not_found",
        `directory "${requested}" does not exist in the workspace root; pass an existing directory inside a git worktree`,
      );
    }
    if (!stats.isDirectory()) {
      throw new HttpError(
        400,
        "invalid_request",
        `"${requested}" is a file; pass the directory of a git worktree (or one inside it)`,
      );
    }
    let location: GitRepositoryLocation;
    try {
      location = await locateRepository(directory);
    } catch {
      throw new HttpError(
        404,
        "not_found",
        `"${requested}" is not inside a git worktree (a bare repository or a .git directory does not count); pass a directory of a checked-out repository`,
      );
    }
    // The whole worktree is reported, so it must lie inside the root, not just the directory.
    if (!isPathInsideRoot(files.root, location.topLevel)) {
      throw new HttpError(
        403,
        "path_outside_root",
        `"${requested}" is in the repository ${location.topLevel}, which extends beyond the workspace root ${files.root}; the git watch only reports repositories whose worktree lies inside the root`,
      );
    }
    return location;
  }

  #serve(client: WebSocket, location: GitRepositoryLocation): void {
    const { logger } = this.#options;
    const send = (frame: GitWatchFrame) => {
      if (client.readyState === client.OPEN) client.send(JSON.stringify(frame));
    };
    const watcher = new GitWatcher({
      location,
      ...(this.#options.debounceMs !== undefined ? { debounceMs: this.#options.debounceMs } : {}),
      ...(this.#options.pollIntervalMs !== undefined
        ? { pollIntervalMs: this.#options.pollIntervalMs }
        : {}),
      onChange: (state) => send({ type: "change", state }),
      onFatal: (error) => {
        logger.warn({ err: error, root: location.topLevel }, "git watch stopped");
        send({ type: "error", error: { code: "not_found", message: error.message } });
        client.close(1011, "repository gone");
      },
      onWarning: (message, error) => logger.warn({ err: error, root: location.topLevel }, message),
    });
    this.#clients.set(client, watcher);
    logger.info({ root: location.topLevel }, "git watch opened");

    keepWebSocketAlive(client, this.#options.pingIntervalMs ?? 30_000);
    client.on("close", () => {
      watcher.close();
      this.#clients.delete(client);
      logger.info({ root: location.topLevel }, "git watch closed");
    });
    client.on("error", () => client.terminate());

    watcher.start().then(
      (state) => send({ type: "snapshot", state, mode: watcher.mode }),
      (error: unknown) => {
        logger.warn({ err: error, root: location.topLevel }, "git watch could not start");
        send({
          type: "error",
          error: {
            code: "internal",
            message: `cannot read the state of ${location.topLevel}: ${(error as Error).message}`,
          },
        });
        client.close(1011, "git status failed");
      },
    );
  }

  /** Closes every watch socket (going away), every watcher and the WebSocket server. */
  async close(): Promise<void> {
    this.#closed = true;
    for (const socket of this.#pending) socket.destroy();
    for (const [client, watcher] of this.#clients) {
      watcher.close();
      client.close(1001, "agent shutting down");
    }
    if (this.#clients.size > 0) await new Promise((resolveWait) => setTimeout(resolveWait, 50));
    for (const client of this.#clients.keys()) client.terminate();
    await new Promise<void>((resolveClose) => this.#server.close(() => resolveClose()));
  }
}
