// A release download server on 127.0.0.1 for agent CLIs: serves the assets it is given by path,
// records every request, and can hold answers back until the test lets them go (to make two
// installs overlap).
import { execFileSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";

export interface FakeReleaseServer {
  /** `http://127.0.0.1:<port>`: the release base URL. */
  baseUrl: string;
  /** The paths requested, in order. */
  requests: string[];
  /** From now on, hold each asset's answer until `letGo` (true) or answer at once (false). */
  hold(holding: boolean): void;
  /** Answers every held request. */
  letGo(): void;
  /** Requests held and not yet answered. */
  held(): number;
  close(): Promise<void>;
}

/** Serves `assets` (path → body); anything else is a 404. */
export async function startFakeReleaseServer(
  assets: ReadonlyMap<string, Buffer>,
): Promise<FakeReleaseServer> {
  const requests: string[] = [];
  let holding = false;
  const waiting: (() => void)[] = [];
  const answer = (response: ServerResponse, body: Buffer) =>
    response
      .writeHead(200, {
        "content-type": "application/octet-stream",
        "content-length": String(body.length),
      })
      .end(body);
  const server = createServer((request, response) => {
    const path = new URL(request.url ?? "/", "http://fake").pathname;
    requests.push(path);
    const body = assets.get(path);
    if (request.method !== "GET" || body === undefined) {
      response.writeHead(404, { "content-type": "text/plain" }).end(`no release asset ${path}\n`);
      return;
    }
    if (holding) waiting.push(() => answer(response, body));
    else answer(response, body);
  });
  await new Promise<void>((resolveListen) => server.listen(0, "127.0.0.1", resolveListen));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    requests,
    hold(next) {
      holding = next;
    },
    letGo() {
      for (const release of waiting.splice(0)) release();
    },
    held: () => waiting.length,
    close: () =>
      new Promise((resolveClose) => {
        for (const release of waiting.splice(0)) release();
        server.close(() => resolveClose());
        server.closeAllConnections();
      }),
  };
}

/**
 * A `.zip` of `files` (relative path → content; executables by mode), built with the system's
 * zip, as release bundles are.
 */
export function zipArchive(
  files: ReadonlyMap<string, { content: string | Buffer; mode?: number }>,
) {
  const directory = mkdtempSync(join(tmpdir(), "deckhand-fake-zip-"));
  try {
    for (const [path, file] of files) {
      mkdirSync(dirname(join(directory, "tree", path)), { recursive: true });
      writeFileSync(join(directory, "tree", path), file.content);
      chmodSync(join(directory, "tree", path), file.mode ?? 0o644);
    }
    execFileSync("zip", ["-qr", join(directory, "archive.zip"), "."], {
      cwd: join(directory, "tree"),
    });
    return readFileSync(join(directory, "archive.zip"));
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}

/** A `.tar.gz` of `files`, built with the system's tar. */
export function tarGzArchive(
  files: ReadonlyMap<string, { content: string | Buffer; mode?: number }>,
) {
  const directory = mkdtempSync(join(tmpdir(), "deckhand-fake-tar-"));
  try {
    for (const [path, file] of files) {
      mkdirSync(dirname(join(directory, path)), { recursive: true });
      writeFileSync(join(directory, path), file.content);
      chmodSync(join(directory, path), file.mode ?? 0o644);
    }
    return execFileSync("tar", ["-czf", "-", "-C", directory, ...files.keys()], {
      maxBuffer: 1024 * 1024 * 1024,
    });
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}
