import { join, resolve } from "node:path";
import type { LaunchProfile } from "@deckhand/sandbox";
import type { ProviderDefinition } from "./registry.ts";

/**
 * Where a provider's agent may write and what it may reach, before the worktree it works in is
 * added: its state directories, writable; with the model proxy (`proxied`), no network but the
 * proxy and its login files hidden like every other credential; keeping its own login, the
 * internet (never the machine's loopback services) and its login files, read-only.
 */
export function providerSandboxProfile(
  provider: Pick<ProviderDefinition, "stateDirectories" | "loginFiles">,
  proxied: boolean,
  home: string,
): LaunchProfile {
  return {
    writable: provider.stateDirectories.map((path) => resolve(home, path)),
    readable: proxied ? [] : provider.loginFiles.map((path) => join(home, path)),
    network: proxied
      ? { internet: false, modelProxy: true }
      : { internet: true, modelProxy: false },
  };
}
