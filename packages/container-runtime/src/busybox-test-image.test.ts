import { BUSYBOX_TEST_IMAGE, ensureBusyboxTestImage } from "@deckhand/testkit";
import { afterAll, describe, expect, it } from "vitest";
import { containerTestSetup } from "../test/support.ts";
import { runCli } from "./container-cli.ts";
import { inspectImage } from "./container-image.ts";
import type { ContainerRuntime } from "./detect-container-runtime.ts";
import { runContainer } from "./run-container.ts";

// testkit's image helper is tested here, where a detected runtime (with this machine's flags) is.
const setup = await containerTestSetup();
const runtime = setup.runtime as ContainerRuntime;
const tag = `localhost/deckhand-test/busybox-cache-${process.pid}:latest`;

describe.skipIf(setup.runtime === null)("ensureBusyboxTestImage", () => {
  afterAll(async () => {
    await runCli(runtime, ["image", "rm", "--force", tag], { timeoutMs: 30_000 });
  });

  it("builds the image offline once and reuses it while the tag exists", async () => {
    expect(setup.image).toBe(BUSYBOX_TEST_IMAGE);
    expect(await inspectImage(runtime, tag)).toBeNull();
    expect(ensureBusyboxTestImage(runtime, tag)).toBe(tag);
    const built = await inspectImage(runtime, tag);
    expect(built?.id).toMatch(/^[0-9a-f]{64}$/);
    // A rebuild would import a new layer and give a new image id (the archive's times differ).
    await new Promise((resolve) => setTimeout(resolve, 1100));
    ensureBusyboxTestImage(runtime, tag);
    expect((await inspectImage(runtime, tag))?.id).toBe(built?.id);
    const result = await runContainer(runtime, {
      image: tag,
      script: "ls /bin | grep -cx -e sh -e chown -e nc; test -w /tmp && echo writable",
    });
    expect(result.output.text).toBe("3\nwritable\n");
  });
});
