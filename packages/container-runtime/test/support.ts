// Container-test setup for this package's tests and for other packages' (batches,
// kubernetes-runtime, e2e) through the `@deckhand/container-runtime/test-support` entry, which
// resolves only under the `source` condition: it is neither built nor published.
import { ensureBusyboxTestImage } from "@deckhand/testkit";
import {
  type ContainerRuntime,
  type DetectContainerRuntimeOptions,
  detectContainerRuntime,
} from "../src/detect-container-runtime.ts";

export interface ContainerTestSetup {
  /** Null when no runtime works here; then `skipReason` says why. */
  runtime: ContainerRuntime | null;
  image: string;
  skipReason: string;
}

/**
 * Podman with the restricted-host flags, and the offline busybox image. Outside CI a machine
 * without Podman skips the container tests with a message saying how to install it; in CI
 * (`CI=true`, where `.ci/run` installs Podman first) a missing runtime fails the suite instead,
 * so a broken install can never pass as skipped tests.
 */
export async function containerTestSetup(
  options: { binaries?: DetectContainerRuntimeOptions["binaries"]; ci?: string } = {},
): Promise<ContainerTestSetup> {
  const detection = await detectContainerRuntime({
    candidates: ["podman"],
    restrictedHost: true,
    binaries: options.binaries,
  });
  const runtime = detection.runtime;
  if (runtime === null) {
    const reasons = detection.probes.map((probe) => probe.unavailableReason).join("; ");
    const message = `container tests need Podman (${reasons}); install it with \`sudo bash scripts/container-runtime.sh\``;
    if ((options.ci ?? process.env.CI) === "true")
      throw new Error(`${message}. CI must install it: failing.`);
    console.warn(`skipping container tests: ${message}`);
    return { runtime: null, image: "", skipReason: message };
  }
  return { runtime, image: ensureBusyboxTestImage(runtime), skipReason: "" };
}
