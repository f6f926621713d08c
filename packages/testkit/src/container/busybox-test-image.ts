import { execFileSync, spawnSync } from "node:child_process";
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** The tag of the shell image container tests run; built offline, never pulled. */
export const BUSYBOX_TEST_IMAGE = "localhost/deckhand-test/busybox:latest";

/** Where busybox-static installs its binary on Debian (`scripts/container-runtime.sh`). */
const BUSYBOX = "/bin/busybox";

/** A container CLI: the binary and the flags that go before a subcommand. */
export interface TestContainerCli {
  readonly binary: string;
  readonly globalArgs: readonly string[];
}

/**
 * Builds a busybox shell image from the machine's static busybox and imports it under `tag`,
 * once per machine: when the engine already has the tag, nothing is rebuilt. No registry is
 * involved, so it works on machines that cannot pull. Returns the tag.
 */
export function ensureBusyboxTestImage(
  cli: TestContainerCli,
  tag: string = BUSYBOX_TEST_IMAGE,
): string {
  const exists = spawnSync(cli.binary, [...cli.globalArgs, "image", "exists", tag], {
    stdio: "ignore",
  });
  if (exists.status === 0) return tag;
  const root = mkdtempSync(join(tmpdir(), "deckhand-busybox-root-"));
  try {
    mkdirSync(join(root, "bin"));
    mkdirSync(join(root, "tmp"));
    // A writable /tmp for any user, as on a real system.
    chmodSync(join(root, "tmp"), 0o1777);
    copyFileSync(BUSYBOX, join(root, "bin", "busybox"));
    chmodSync(join(root, "bin", "busybox"), 0o755);
    const applets = execFileSync(BUSYBOX, ["--list"], { encoding: "utf8" }).split("\n");
    for (const applet of applets) {
      if (applet !== "" && applet !== "busybox") symlinkSync("busybox", join(root, "bin", applet));
    }
    const archive = execFileSync("tar", ["-C", root, "-c", "."], {
      maxBuffer: 64 * 1024 * 1024,
    });
    execFileSync(cli.binary, [...cli.globalArgs, "import", "-", tag], {
      input: archive,
      stdio: ["pipe", "ignore", "pipe"],
    });
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
  return tag;
}
