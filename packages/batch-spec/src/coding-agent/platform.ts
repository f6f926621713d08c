import { BatchSpecError } from "../batch-spec-error.ts";

/**
 * The platform an agent is installed for, decided by the caller (from `process.platform` and
 * `process.arch`, or from the image's manifest) — never detected by the rendered script, so an
 * unsupported platform is a render error rather than a shell `case` failing at run time.
 */
export interface AgentPlatform {
  /** `linux` or `darwin`. */
  os: string;
  /** `x64` or `arm64`; Docker's `amd64` and the kernel's `x86_64`/`aarch64` are accepted too. */
  arch: string;
  /** Linux C library; `musl` selects the Alpine builds where an agent ships them. */
  libc?: "glibc" | "musl";
}

export type AgentOperatingSystem = "linux" | "darwin";
export type AgentArchitecture = "x64" | "arm64";

export interface ResolvedPlatform {
  os: AgentOperatingSystem;
  arch: AgentArchitecture;
  libc: "glibc" | "musl";
}

/** `os/arch` as written in supported-platform lists and error messages. */
export type PlatformName = `${AgentOperatingSystem}/${AgentArchitecture}`;

export const ALL_PLATFORMS: readonly PlatformName[] = [
  "linux/x64",
  "linux/arm64",
  "darwin/x64",
  "darwin/arm64",
];

const OPERATING_SYSTEMS: Readonly<Record<string, AgentOperatingSystem>> = {
  linux: "linux",
  darwin: "darwin",
  macos: "darwin",
};

const ARCHITECTURES: Readonly<Record<string, AgentArchitecture>> = {
  x64: "x64",
  amd64: "x64",
  x86_64: "x64",
  arm64: "arm64",
  aarch64: "arm64",
};

export function platformName(platform: { os: string; arch: string }): string {
  return `${platform.os}/${platform.arch}`;
}

/**
 * Normalises the caller's platform and checks it against what the agent supports; the error
 * names the supported platforms so the user can pick an image that has one.
 */
export function resolvePlatform(
  platform: AgentPlatform,
  agent: { type: string; supportedPlatforms: readonly PlatformName[] },
): { ok: true; value: ResolvedPlatform } | { ok: false; error: BatchSpecError } {
  const os = OPERATING_SYSTEMS[platform.os.toLowerCase()];
  const arch = ARCHITECTURES[platform.arch.toLowerCase()];
  const libc = platform.libc ?? "glibc";
  const supported = agent.supportedPlatforms.join(", ");
  if (!os || !arch || !agent.supportedPlatforms.includes(`${os}/${arch}`)) {
    return {
      ok: false,
      error: new BatchSpecError(
        "unsupported_platform",
        `${agent.type} cannot be installed on ${platformName(platform)}; supported platforms: ${supported}`,
      ),
    };
  }
  if (libc !== "glibc" && libc !== "musl") {
    return {
      ok: false,
      error: new BatchSpecError(
        "unsupported_platform",
        `unknown libc "${String(libc)}" for ${platformName(platform)}; use "glibc" or "musl"`,
      ),
    };
  }
  return { ok: true, value: { os, arch, libc } };
}
