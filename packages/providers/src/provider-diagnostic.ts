import type { ProviderEntry } from "@deckhand/wire";
import type { ConfigSnapshot } from "./config-file.ts";
import type { ProbeRecord } from "./probe-store.ts";
import type { Installed, ProviderLaunches } from "./provider-launches.ts";

export interface DiagnosticInput {
  id: string;
  config: ConfigSnapshot;
  installed: Installed;
  /** The provider's last probe, for this command or an earlier one. */
  record: ProbeRecord | null;
  /** The provider as the snapshot shows it. */
  entry: ProviderEntry;
  /** Runs its version command. */
  launches: ProviderLaunches;
}

/** Its version: the version command's output, or what the agent reported when it has none. */
async function versionLines(input: DiagnosticInput): Promise<string[]> {
  const { provider, executable } = input.installed;
  if (executable && provider.versionArgs !== null) {
    const version = await input.launches.version(provider, executable, provider.versionArgs);
    const status = version.timedOut
      ? "timed out"
      : version.exitCode === null
        ? "did not run"
        : `exit ${version.exitCode}`;
    return [
      `version output (${provider.versionArgs.join(" ")}, ${status}):`,
      version.output.trimEnd() === "" ? "  (none)" : version.output.trimEnd(),
    ];
  }
  if (executable) {
    const reported = input.record?.result?.version ?? null;
    return [
      `version: ${reported ?? "unknown"} (as the agent reports it in ACP initialize; it has no version command)`,
    ];
  }
  return [];
}

/** Its last probe: when, how it ended, its error and the agent's stderr. */
function probeLines(record: ProbeRecord | null, fingerprint: string | null): string[] {
  if (!record) return ["last probe: never"];
  const stale =
    fingerprint === null || record.fingerprint !== fingerprint
      ? " (for an earlier command or env)"
      : "";
  const lines = [`last probe: ${record.probedAt.toISOString()}, ${record.status}${stale}`];
  if (record.error) lines.push(`last probe error: ${record.error}`);
  const tail = record.result?.stderrTail.trimEnd() ?? "";
  lines.push(`stderr (tail):`);
  lines.push(tail === "" ? "  (empty)" : tail);
  return lines;
}

/**
 * Plain text for a human: the provider, its resolved command and env names (never values), its
 * version, its error, its last probe and the config problems about it.
 */
export async function providerDiagnostic(input: DiagnosticInput): Promise<string> {
  const { id, config, installed, entry } = input;
  const { provider, executable, fingerprint } = installed;
  const lines = [
    `provider: ${provider.id} (${provider.label}; ${provider.transport}; ${provider.builtin ? "built-in" : "custom"})`,
    `status: ${entry.status}`,
    `enabled: ${provider.enabled}`,
  ];
  if (provider.command) {
    lines.push(`command: ${provider.command.map((part) => JSON.stringify(part)).join(" ")}`);
    lines.push(`resolved: ${executable ?? "not found"}`);
    const envNames = Object.keys(provider.env);
    // Names only: values may be credentials.
    lines.push(`env: ${envNames.length > 0 ? envNames.join(", ") : "(none)"}`);
  }
  lines.push(...(await versionLines(input)));
  if (entry.last_error) lines.push(`error: ${entry.last_error}`);
  lines.push(...probeLines(input.record, fingerprint));
  const related = config.diagnostics.filter(
    (diagnostic) =>
      diagnostic.field === `providers.${id}` || diagnostic.field.startsWith(`providers.${id}.`),
  );
  for (const diagnostic of related) {
    lines.push(`config: ${diagnostic.file}: ${diagnostic.field}: ${diagnostic.message}`);
  }
  return `${lines.join("\n")}\n`;
}
