// The fake opencode CLI of fake-opencode-cli.cjs laid out as opencode's releases are:
// `v<version>/opencode-<os>-<arch>[-musl].tar.gz` holding the `opencode` executable.
import { readFileSync } from "node:fs";
import {
  type FakeReleaseServer,
  startFakeReleaseServer,
  tarGzArchive,
} from "./fake-release-server.ts";

const FAKE_OPENCODE_SOURCE = new URL("./fake-opencode-cli.cjs", import.meta.url);

/** The fake opencode CLI as an executable script reporting `version`. */
export function fakeOpencodeScript(version: string): string {
  if (!/^[0-9A-Za-z][0-9A-Za-z.+_-]*$/.test(version)) {
    throw new Error(`"${version}" is not a version the fake opencode can carry`);
  }
  return readFileSync(FAKE_OPENCODE_SOURCE, "utf8").replace("__FAKE_OPENCODE_VERSION__", version);
}

export interface FakeOpencodeRelease extends FakeReleaseServer {
  version: string;
}

/** Serves the linux and darwin `.tar.gz` assets of `version` (glibc and musl alike). */
export async function startFakeOpencodeRelease(options: {
  version: string;
}): Promise<FakeOpencodeRelease> {
  const archive = tarGzArchive(
    new Map([["opencode", { content: fakeOpencodeScript(options.version), mode: 0o755 }]]),
  );
  const assets = new Map<string, Buffer>();
  for (const os of ["linux", "darwin"]) {
    for (const arch of ["x64", "arm64"]) {
      for (const suffix of os === "linux" ? ["", "-musl"] : [""]) {
        assets.set(`/v${options.version}/opencode-${os}-${arch}${suffix}.tar.gz`, archive);
      }
    }
  }
  const server = await startFakeReleaseServer(assets);
  return { ...server, version: options.version };
}
