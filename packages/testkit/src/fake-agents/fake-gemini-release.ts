// The fake Gemini CLI of fake-gemini-cli.cjs laid out as gemini-cli's releases are since 0.35:
// a code-split bundle (`gemini.js` and the chunk it loads), published whole as
// `v<version>/gemini-cli-bundle.zip`. The entry file alone is served too, at
// `v<version>/gemini.js`, as a renderer that downloads only it would fetch it.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import {
  type FakeReleaseServer,
  startFakeReleaseServer,
  zipArchive,
} from "./fake-release-server.ts";

const FAKE_GEMINI_SOURCE = new URL("./fake-gemini-cli.cjs", import.meta.url);
const CHUNK = "chunk-FAKE.js";

/** The bundle's entry: loads the chunk from beside itself, as gemini's `gemini.js` does. */
const ENTRY = `#!/usr/bin/env node
"use strict";
require("./${CHUNK}").main().catch((error) => {
  process.stderr.write(\`\${error instanceof Error ? error.stack : String(error)}\\n\`);
  process.exit(1);
});
`;

/** The fake Gemini CLI's bundle for `version`: relative path → file. */
export function fakeGeminiBundle(version: string): Map<string, { content: string; mode?: number }> {
  if (!/^[0-9A-Za-z][0-9A-Za-z.+_-]*$/.test(version)) {
    throw new Error(`"${version}" is not a version the fake gemini can carry`);
  }
  const chunk = readFileSync(FAKE_GEMINI_SOURCE, "utf8").replace(
    "__FAKE_GEMINI_VERSION__",
    version,
  );
  return new Map([
    ["gemini.js", { content: ENTRY, mode: 0o755 }],
    [CHUNK, { content: chunk }],
  ]);
}

/** Every file under `directory` (a real gemini `bundle/`), for an opt-in test's release. */
function directoryFiles(directory: string): Map<string, { content: Buffer; mode: number }> {
  const files = new Map<string, { content: Buffer; mode: number }>();
  const visit = (current: string) => {
    for (const name of readdirSync(current)) {
      const path = join(current, name);
      const stats = statSync(path);
      if (stats.isDirectory()) visit(path);
      else
        files.set(relative(directory, path), {
          content: readFileSync(path),
          mode: stats.mode & 0o777,
        });
    }
  };
  visit(directory);
  return files;
}

export interface FakeGeminiReleaseOptions {
  version: string;
  /** Ship this gemini `bundle/` directory (a real one, for opt-in tests) instead of the fake. */
  bundleDirectory?: string;
}

export interface FakeGeminiRelease extends FakeReleaseServer {
  version: string;
}

/** Serves `v<version>/gemini-cli-bundle.zip` and `v<version>/gemini.js`. */
export async function startFakeGeminiRelease(
  options: FakeGeminiReleaseOptions,
): Promise<FakeGeminiRelease> {
  const bundle =
    options.bundleDirectory === undefined
      ? fakeGeminiBundle(options.version)
      : directoryFiles(options.bundleDirectory);
  const entry = bundle.get("gemini.js");
  if (entry === undefined) throw new Error("the bundle has no gemini.js");
  const server = await startFakeReleaseServer(
    new Map([
      [`/v${options.version}/gemini-cli-bundle.zip`, zipArchive(bundle)],
      [`/v${options.version}/gemini.js`, Buffer.from(entry.content)],
    ]),
  );
  return { ...server, version: options.version };
}
