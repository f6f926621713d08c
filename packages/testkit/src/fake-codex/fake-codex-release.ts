// Serves Codex release archives on 127.0.0.1, laid out as GitHub serves codex's releases
// (`<base>/rust-v<version>/codex-<target>.tar.gz`, the binary inside named `codex-<target>`), so
// the `codingAgent` renderer's real install path (curl, tar, the version check, the move into
// place) runs in tests. The archive holds the fake CLI of fake-codex-cli.cjs by default, or any
// executable given (a real codex binary, for opt-in tests).
import { execFileSync } from "node:child_process";
import { chmodSync, copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** The fake CLI's source; `__FAKE_CODEX_VERSION__` stands for the version it reports. */
const FAKE_CODEX_SOURCE = new URL("./fake-codex-cli.cjs", import.meta.url);

/** The fake Codex CLI as an executable script reporting `codex-cli <version>`. */
export function fakeCodexScript(version: string): string {
  if (!/^[0-9A-Za-z][0-9A-Za-z.+_-]*$/.test(version)) {
    throw new Error(`"${version}" is not a version the fake codex can carry`);
  }
  return readFileSync(FAKE_CODEX_SOURCE, "utf8").replace("__FAKE_CODEX_VERSION__", version);
}

/**
 * A `.tar.gz` holding one executable named `member`: the fake CLI for `version`, or the file at
 * `binary`. Built with the system's tar, as the step unpacks it with tar.
 */
export function fakeCodexArchive(version: string, member: string, binary?: string): Buffer {
  const directory = mkdtempSync(join(tmpdir(), "deckhand-fake-codex-"));
  try {
    const path = join(directory, member);
    if (binary === undefined) writeFileSync(path, fakeCodexScript(version));
    else copyFileSync(binary, path);
    chmodSync(path, 0o755);
    return execFileSync("tar", ["-czf", "-", "-C", directory, member], {
      maxBuffer: 512 * 1024 * 1024,
    });
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}

/** Lines of the fake CLI's protocol, for a fake model's reply text. */
export const fakeCodexDirective = {
  /** The agent writes `content` to `path` (relative to its working directory). */
  write: (path: string, content: string): string => `write ${path} ${JSON.stringify(content)}`,
  /** The agent exits 1 with `message` on stderr. */
  fail: (message: string): string => `fail ${message}`,
  /** The agent runs `command` with `sh -c` in its working directory, its output on stderr. */
  exec: (command: string): string => `exec ${JSON.stringify(command)}`,
} as const;

export interface FakeCodexReleaseOptions {
  /** The version the release is published under, and the fake reports. */
  version: string;
  /** Ship this executable instead of the fake CLI (it must report `codex-cli <version>`). */
  binary?: string;
}

export interface FakeCodexRelease {
  /** The release base URL: an install source `{ kind: "release", baseUrl }`. */
  baseUrl: string;
  version: string;
  /** The paths requested, in order. */
  requests: string[];
  close(): Promise<void>;
}

/** Serves `rust-v<version>/codex-<target>.tar.gz` for any target; anything else is a 404. */
export async function startFakeCodexRelease(
  options: FakeCodexReleaseOptions,
): Promise<FakeCodexRelease> {
  const requests: string[] = [];
  const archives = new Map<string, Buffer>();
  const prefix = `/rust-v${options.version}/`;
  const server = createServer((request, response) => {
    const path = new URL(request.url ?? "/", "http://fake").pathname;
    requests.push(path);
    const asset = path.startsWith(prefix) ? path.slice(prefix.length) : "";
    const member = /^(codex-[a-z0-9_-]+)\.tar\.gz$/.exec(asset)?.[1];
    if (request.method !== "GET" || member === undefined) {
      response.writeHead(404, { "content-type": "text/plain" }).end(`no release asset ${path}\n`);
      return;
    }
    let archive = archives.get(member);
    if (archive === undefined) {
      archive = fakeCodexArchive(options.version, member, options.binary);
      archives.set(member, archive);
    }
    response
      .writeHead(200, {
        "content-type": "application/gzip",
        "content-length": String(archive.length),
      })
      .end(archive);
  });
  await new Promise<void>((resolveListen) => server.listen(0, "127.0.0.1", resolveListen));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    version: options.version,
    requests,
    close: () =>
      new Promise((resolveClose) => {
        server.close(() => resolveClose());
        server.closeAllConnections();
      }),
  };
}
