import { isAbsolute } from "node:path";
import { z } from "zod";

/**
 * How agent-facing processes are confined: `auto` uses bubblewrap where it works and otherwise
 * runs them unsandboxed with one warning; `bubblewrap` refuses to start without it; `none` runs
 * them as the server's user with only the environment policy between them and its secrets.
 */
export const SandboxModeSchema = z.enum(["auto", "bubblewrap", "none"]);
export type SandboxMode = z.infer<typeof SandboxModeSchema>;

/**
 * A host a sandboxed agent may reach through the sandbox's HTTP proxy: `registry.npmjs.org`,
 * `*.github.com` (any subdomain), optionally with `:port` (443 and 80 when none is given).
 */
export const HostPatternSchema = z
  .string()
  .regex(
    /^(?:\*\.)?[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*(?::\d{1,5})?$/i,
    "must be a host name, optionally starting with *. and ending with :port, such as registry.npmjs.org or *.github.com:443",
  );

/** Whether local batch `run:` steps reach the internet (never the machine's loopback services). */
export const StepNetworkSchema = z.enum(["full", "none"]);
export type StepNetwork = z.infer<typeof StepNetworkSchema>;

const AbsolutePathSchema = z
  .string()
  .refine((path) => isAbsolute(path), "must be an absolute path, such as /srv/secrets");

/** `sandbox` in config.json: a mode, or the mode with its settings. */
export const SandboxSettingsObjectSchema = z.strictObject({
  mode: SandboxModeSchema.optional(),
  /** Hosts agents and their commands may reach besides the model proxy; none by default. */
  allowHosts: z.array(HostPatternSchema).optional(),
  /** Network of local `run:` steps; `full` (the internet, not loopback) by default. */
  stepNetwork: StepNetworkSchema.optional(),
  /** Further files or directories no sandboxed process sees, on top of the built-in list. */
  hide: z.array(AbsolutePathSchema).optional(),
  /**
   * Directories every sandboxed process may write besides its own places: caches shared across
   * jobs (a build cache, a package store). Whatever one job leaves there, the next one reads.
   */
  writable: z.array(AbsolutePathSchema).optional(),
});

export const SandboxSettingsFileSchema = z.union([SandboxModeSchema, SandboxSettingsObjectSchema]);
export type SandboxSettingsFile = z.infer<typeof SandboxSettingsFileSchema>;

/** The settings with every default filled in. */
export interface SandboxSettings {
  mode: SandboxMode;
  allowHosts: readonly string[];
  stepNetwork: StepNetwork;
  hide: readonly string[];
  writable: readonly string[];
}

export const DEFAULT_SANDBOX_SETTINGS: SandboxSettings = {
  mode: "auto",
  allowHosts: [],
  stepNetwork: "full",
  hide: [],
  writable: [],
};

/** `sandbox` of config.json (a mode or an object, or absent) with its defaults. */
export function sandboxSettings(file: SandboxSettingsFile | undefined): SandboxSettings {
  if (file === undefined) return DEFAULT_SANDBOX_SETTINGS;
  if (typeof file === "string") return { ...DEFAULT_SANDBOX_SETTINGS, mode: file };
  return {
    mode: file.mode ?? DEFAULT_SANDBOX_SETTINGS.mode,
    allowHosts: file.allowHosts ?? [],
    stepNetwork: file.stepNetwork ?? DEFAULT_SANDBOX_SETTINGS.stepNetwork,
    hide: file.hide ?? [],
    writable: file.writable ?? [],
  };
}
