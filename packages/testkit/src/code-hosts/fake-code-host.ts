// A loopback fake of one code host: its pull request API (GitHub, GitLab, Bitbucket Cloud or
// Gitea, with exactly the endpoints @deckhand/code-hosts calls) and its git remotes (git's own
// smart HTTP backend over bare repositories), on one port, with a request log and knobs for
// rate limits, failing checks, reviews and merges.
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { bitbucketRoutes } from "./fake-bitbucket.ts";
import {
  type FakeChecks,
  FakeCodeHostModel,
  type FakeCodeHostType,
  type FakePullRequest,
  type FakeRepository,
  type FakeReviewState,
} from "./fake-code-host-model.ts";
import { giteaRoutes } from "./fake-gitea.ts";
import { githubRoutes } from "./fake-github.ts";
import { gitlabRoutes } from "./fake-gitlab.ts";
import { type FakeAnswer, type FakeRoute, matchRoute } from "./fake-routes.ts";
import {
  carriesToken,
  type GitHttpRequestRecord,
  handleGitHttp,
  isGitHttpPath,
} from "./git-http-backend.ts";

export interface FakeHostRequest {
  method: string;
  /** The path as sent (still percent-encoded). */
  path: string;
  query: URLSearchParams;
  /** The body parsed as JSON, or undefined. */
  body: unknown;
  /** The status the fake answered. */
  status: number;
  /** When the request arrived, in performance.now() milliseconds. */
  at: number;
  /** Whether it carried the fake's token. */
  authorized: boolean;
}

/** An answer the fake gives instead of (or after) handling a request. */
export interface FakeFailure {
  status: number;
  headers?: Record<string, string>;
  body?: unknown;
}

export interface FailNextOptions {
  /** How many requests get the failure; 1 by default. */
  times?: number;
  /** Only requests this accepts count; every API request by default. */
  when?: (request: FakeHostRequest) => boolean;
  /**
   * Handle the request (create the pull request, say), then answer with the failure: an
   * answer lost on the way back.
   */
  afterHandling?: boolean;
}

/** Rate-limit answers as each host gives them. */
export const fakeRateLimit = {
  /** 429 with Retry-After, which every host may send. */
  retryAfter: (seconds: number): FakeFailure => ({
    status: 429,
    headers: { "retry-after": String(seconds) },
    body: { message: "Too Many Requests" },
  }),
  /** GitHub's secondary (abuse) limit: 403 with a message and, sometimes, Retry-After. */
  githubSecondary: (retryAfterSeconds?: number): FakeFailure => ({
    status: 403,
    headers: retryAfterSeconds === undefined ? {} : { "retry-after": String(retryAfterSeconds) },
    body: {
      message:
        "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
    },
  }),
  /** A primary limit used up: 403 (GitHub) or 429 (GitLab) with remaining 0 and the reset time. */
  exhausted: (
    resetEpochSeconds: number,
    style: "x-ratelimit" | "ratelimit" = "x-ratelimit",
  ): FakeFailure => {
    const prefix = style === "x-ratelimit" ? "x-ratelimit" : "ratelimit";
    return {
      status: style === "x-ratelimit" ? 403 : 429,
      headers: {
        [`${prefix}-limit`]: "5000",
        [`${prefix}-remaining`]: "0",
        [`${prefix}-reset`]: String(resetEpochSeconds),
      },
      body: { message: "API rate limit exceeded" },
    };
  },
};

export interface FakeCodeHost {
  type: FakeCodeHostType;
  /** `http://127.0.0.1:<port>`: the web address, and where repositories are served (`/<path>.git`). */
  url: string;
  /** The API base the clients derive from `url` (Bitbucket Cloud's must be given: `<url>/2.0`). */
  apiUrl: string;
  token: string;
  model: FakeCodeHostModel;
  /** Every API request, in order. */
  requests: FakeHostRequest[];
  /** Every git smart HTTP request, in order. */
  gitRequests: GitHttpRequestRecord[];
  createRepository(
    path: string,
    options?: { defaultBranch?: string; files?: Record<string, string> },
  ): FakeRepository;
  /** Commits files onto a branch in the bare repository, as a person pushing would; returns the commit. */
  commitToBranch(
    repository: string,
    branch: string,
    files: Record<string, string>,
    options?: { message?: string; author?: string },
  ): string;
  /** The commit a branch points at on the host, or undefined. */
  branchSha(repository: string, branch: string): string | undefined;
  /** The https clone URL of a repository: `<url>/<path>.git`. */
  cloneUrl(path: string): string;
  pullRequests(repository?: string): FakePullRequest[];
  pullRequest(repository: string, number: number): FakePullRequest;
  failNext(failure: FakeFailure, options?: FailNextOptions): void;
  /** Sets the checks of the pull request's current head commit. */
  setChecks(repository: string, number: number, checks: FakeChecks): void;
  addReview(repository: string, number: number, user: string, state: FakeReviewState): void;
  setMergeable(repository: string, number: number, mergeable: boolean): void;
  /** Merges the pull request, as a person would on the host. */
  merge(repository: string, number: number): void;
  /** API requests matching a method and a path pattern (`/pulls$`, say). */
  requestsTo(method: string, path: RegExp): FakeHostRequest[];
  /** Stops the server, drops open connections and removes the repositories. */
  close(): Promise<void>;
}

const ROUTES: Record<FakeCodeHostType, FakeRoute[]> = {
  github: githubRoutes,
  gitlab: gitlabRoutes,
  gitea: giteaRoutes,
  "bitbucket-cloud": bitbucketRoutes,
};

const API_PREFIX: Record<FakeCodeHostType, string> = {
  github: "/api/v3",
  gitlab: "/api/v4",
  gitea: "/api/v1",
  "bitbucket-cloud": "/2.0",
};

/** Whether the API request carries the token the way the host takes it. */
function authorizedFor(type: FakeCodeHostType, request: IncomingMessage, token: string): boolean {
  const authorization = request.headers.authorization;
  if (type === "gitlab" && request.headers["private-token"] === token) return true;
  return carriesToken(authorization, token);
}

async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

function send(response: ServerResponse, answer: FakeAnswer): void {
  const headers: Record<string, string> = { ...answer.headers };
  if (answer.body === undefined || answer.status === 204) {
    response.writeHead(answer.status, headers).end();
    return;
  }
  headers["content-type"] = "application/json; charset=utf-8";
  response.writeHead(answer.status, headers).end(JSON.stringify(answer.body));
}

interface PendingFailure {
  failure: FakeFailure;
  remaining: number;
  when: ((request: FakeHostRequest) => boolean) | undefined;
  afterHandling: boolean;
}

/** Starts a fake code host of `type` on 127.0.0.1 with a random port. */
export async function startFakeCodeHost(options: {
  type: FakeCodeHostType;
  /** The token API and git requests must carry; a fixed test value by default. */
  token?: string;
}): Promise<FakeCodeHost> {
  const type = options.type;
  const token = options.token ?? `fake-${type}-token-0123456789`;
  const root = mkdtempSync(join(tmpdir(), `deckhand-fake-${type}-`));
  const model = new FakeCodeHostModel(root);
  const requests: FakeHostRequest[] = [];
  const gitRequests: GitHttpRequestRecord[] = [];
  const failures: PendingFailure[] = [];
  let webUrl = "";

  const takeFailure = (request: FakeHostRequest): PendingFailure | undefined => {
    const index = failures.findIndex((pending) => pending.when?.(request) ?? true);
    if (index === -1) return undefined;
    const pending = failures[index]!;
    pending.remaining -= 1;
    if (pending.remaining <= 0) failures.splice(index, 1);
    return pending;
  };

  const answerApi = async (request: IncomingMessage, response: ServerResponse, url: URL) => {
    const text = await readBody(request);
    let body: unknown;
    try {
      body = text === "" ? undefined : JSON.parse(text);
    } catch {
      body = undefined;
    }
    const record: FakeHostRequest = {
      method: request.method ?? "GET",
      path: url.pathname,
      query: url.searchParams,
      body,
      status: 0,
      at: performance.now(),
      authorized: authorizedFor(type, request, token),
    };
    requests.push(record);
    const failure = takeFailure(record);
    const finish = (answer: FakeAnswer) => {
      record.status = answer.status;
      send(response, answer);
    };
    if (failure !== undefined && !failure.afterHandling) {
      finish(failure.failure);
      return;
    }
    if (!record.authorized) {
      finish({ status: 401, body: { message: "Bad credentials" } });
      return;
    }
    let answer: FakeAnswer = {
      status: 404,
      body: { message: `no fake route for ${record.method} ${url.pathname}` },
    };
    for (const candidate of ROUTES[type]) {
      if (candidate.method !== record.method) continue;
      const params = matchRoute(candidate.pattern, url.pathname);
      if (params === undefined) continue;
      answer = candidate.handle(
        { method: record.method, params, query: url.searchParams, body },
        { model, webUrl },
      );
      break;
    }
    finish(failure?.afterHandling ? failure.failure : answer);
  };

  const server = createServer((request, response) => {
    const url = new URL(request.url ?? "/", "http://127.0.0.1");
    if (isGitHttpPath(url.pathname)) {
      handleGitHttp(request, response, {
        projectRoot: root,
        token,
        onRequest: (record) => gitRequests.push(record),
      });
      return;
    }
    answerApi(request, response, url).catch((error: unknown) => {
      if (!response.headersSent) response.writeHead(500);
      response.end(String(error));
    });
  });
  await new Promise<void>((resolveListen) => server.listen(0, "127.0.0.1", resolveListen));
  const { port } = server.address() as AddressInfo;
  webUrl = `http://127.0.0.1:${port}`;

  const pullRequest = (repository: string, number: number) => {
    const pull = model.find(repository, number);
    if (pull === undefined) throw new Error(`the fake has no pull request ${repository}#${number}`);
    return pull;
  };

  return {
    type,
    url: webUrl,
    apiUrl: `${webUrl}${API_PREFIX[type]}`,
    token,
    model,
    requests,
    gitRequests,
    createRepository: (path, repositoryOptions) => model.createRepository(path, repositoryOptions),
    commitToBranch: (repository, branch, files, commitOptions) =>
      model.commitToBranch(repository, branch, files, commitOptions),
    branchSha: (repository, branch) => {
      const found = model.repository(repository);
      return found === undefined ? undefined : model.branchSha(found, branch);
    },
    cloneUrl: (path) => `${webUrl}/${path}.git`,
    pullRequests: (repository) =>
      model.pullRequests
        .filter((pull) => repository === undefined || pull.repository === repository)
        .map((pull) => model.refresh(pull)),
    pullRequest,
    failNext: (failure, failOptions = {}) => {
      failures.push({
        failure,
        remaining: failOptions.times ?? 1,
        when: failOptions.when,
        afterHandling: failOptions.afterHandling ?? false,
      });
    },
    setChecks: (repository, number, checks) => {
      model.checks.set(pullRequest(repository, number).headSha, checks);
    },
    addReview: (repository, number, user, state) => {
      pullRequest(repository, number).reviews.push({ user, state });
    },
    setMergeable: (repository, number, mergeable) => {
      pullRequest(repository, number).mergeable = mergeable;
    },
    merge: (repository, number) => {
      pullRequest(repository, number).state = "merged";
    },
    requestsTo: (method, path) =>
      requests.filter((request) => request.method === method && path.test(request.path)),
    close: () =>
      new Promise<void>((resolveClose) => {
        server.closeAllConnections();
        server.close(() => {
          rmSync(root, { recursive: true, force: true });
          resolveClose();
        });
      }),
  };
}
