import { chmodSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sandboxTestSetup } from "@deckhand/testkit";
import { afterAll, describe, expect, it } from "vitest";
import { detectSandbox } from "./detect-sandbox.ts";

const setup = sandboxTestSetup();

describe.skipIf(!setup.available)("detectSandbox", () => {
  const directories: string[] = [];
  afterAll(() => {
    for (const directory of directories) rmSync(directory, { recursive: true, force: true });
  });

  it("reports a slirp4netns that fails after bubblewrap made the sandbox, instead of waiting forever", async () => {
    // As in a container, where slirp4netns run as an unprivileged user cannot join the
    // sandbox's network namespace: bubblewrap has reported its child and waits on its block fd.
    const path = mkdtempSync(join(tmpdir(), "deckhand-detect-sandbox-"));
    directories.push(path);
    const found = await detectSandbox("bubblewrap");
    if (found.kind !== "bubblewrap") throw new Error("bubblewrap was found before");
    symlinkSync(found.bubblewrap, join(path, "bwrap"));
    const slirp = join(path, "slirp4netns");
    writeFileSync(
      slirp,
      '#!/bin/sh\necho "setns(CLONE_NEWNET): Operation not permitted" >&2\nexit 1\n',
    );
    chmodSync(slirp, 0o755);

    const capability = await detectSandbox("auto", { path, timeoutMs: 10_000 });
    expect(capability).toMatchObject({ kind: "bubblewrap", slirp4netns: null });
    expect(capability.kind === "bubblewrap" && capability.internetFallback).toMatch(
      /^slirp4netns does not work here \(slirp4netns failed: setns\(CLONE_NEWNET\): Operation not permitted\)/,
    );
  });
});
