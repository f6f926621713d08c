import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { scriptedAcpAgentCommand } from "@deckhand/testkit";
import {
  type Project,
  type ProviderEntry,
  type ProvidersConfigResponse,
  type ProvidersSnapshot,
  ServerPath,
  serverPath,
  WireHeader,
} from "@deckhand/wire";
import { afterEach, describe, expect, it } from "vitest";
import {
  backends,
  Cleanups,
  databaseUrlFor,
  makeRepository,
  startTestServer,
  type TestServer,
  tempDir,
} from "./harness.ts";

const cleanups = new Cleanups();
afterEach(() => cleanups.run());

function entry(snapshot: ProvidersSnapshot, id: string): ProviderEntry {
  const found = snapshot.providers.find((provider) => provider.id === id);
  if (!found) throw new Error(`no provider ${id} in ${JSON.stringify(snapshot).slice(0, 500)}`);
  return found;
}

/**
 * The providers snapshot once no probe it shows is still `starting`: a snapshot waits a bounded
 * time for the probes it needs, and on a busy machine an agent can take longer to start than
 * that, so the test asks again (joining the running probe) until each has answered.
 */
async function settledSnapshot(
  harness: TestServer,
  path: string = ServerPath.providersSnapshot,
): Promise<{ status: number; body: ProvidersSnapshot }> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    const snapshot = await harness.api<ProvidersSnapshot>("GET", path);
    const starting =
      snapshot.status === 200 &&
      snapshot.body.providers.some((provider) => provider.status === "starting");
    if (!starting || Date.now() > deadline) return snapshot;
  }
}

describe("providers through the server", () => {
  it("shows a custom scripted ACP agent ready, and keeps it disabled across a restart", async () => {
    const dataDir = tempDir(cleanups);
    writeFileSync(
      join(dataDir, "providers.json"),
      JSON.stringify({
        providers: {
          scripted: {
            extends: "acp",
            label: "Scripted",
            command: scriptedAcpAgentCommand("normal"),
          },
        },
      }),
    );
    const config = { workspaceAgent: false };
    const first = await startTestServer(cleanups, { dataDir, config });
    const snapshot = await settledSnapshot(first);
    expect(snapshot.status).toBe(200);
    const scripted = entry(snapshot.body, "scripted");
    expect(scripted).toMatchObject({ status: "ready", label: "Scripted", transport: "acp" });
    expect(scripted.models.length).toBeGreaterThan(0);
    expect(scripted.modes.length).toBeGreaterThan(0);
    expect(scripted.commands.length).toBeGreaterThan(0);
    // Built-ins are there too.
    expect(snapshot.body.providers.map((provider) => provider.id)).toContain("codex");

    const current = await first.api<ProvidersConfigResponse>("GET", ServerPath.providersConfig);
    const response = await fetch(`${first.server.url}${ServerPath.providersConfig}`, {
      method: "PATCH",
      headers: { "content-type": "application/merge-patch+json", "if-match": current.body.etag },
      body: JSON.stringify({ providers: { scripted: { enabled: false } } }),
    });
    expect(response.status).toBe(200);
    const probes = await first.server.database.query<{ provider_id: string }>(
      "select provider_id from provider_probes",
    );
    expect(probes.rows.map((row) => row.provider_id)).toContain("scripted");
    await first.server.close();

    const second = await startTestServer(cleanups, { dataDir, config });
    const after = await second.api<ProvidersSnapshot>("GET", ServerPath.providersSnapshot);
    expect(entry(after.body, "scripted").status).toBe("disabled");
    const document = await second.api<ProvidersConfigResponse>("GET", ServerPath.providersConfig);
    // The custom provider's command survived the merge patch.
    expect(JSON.stringify(document.body.config)).toContain("scripted-acp-agent");
  });

  it("keeps a probe result across restarts within the TTL, and probes again when the stored row no longer parses", async () => {
    const dataDir = tempDir(cleanups);
    writeFileSync(
      join(dataDir, "providers.json"),
      JSON.stringify({
        providers: { scripted: { extends: "acp", command: scriptedAcpAgentCommand("normal") } },
      }),
    );
    const config = { workspaceAgent: false };
    const scriptedEntry = async (harness: TestServer) => {
      const snapshot = await settledSnapshot(harness);
      return entry(snapshot.body, "scripted");
    };

    const first = await startTestServer(cleanups, { dataDir, config });
    const probed = await scriptedEntry(first);
    expect(probed).toMatchObject({ status: "ready" });
    expect(probed.probed_at).not.toBeNull();
    await first.server.close();

    const second = await startTestServer(cleanups, { dataDir, config });
    expect(await scriptedEntry(second)).toEqual(probed);
    // A row this version cannot read, as after a schema change.
    await second.server.database.query(
      `update provider_probes set result = '{"models": "garbled"}'::jsonb where provider_id = 'scripted'`,
    );
    await second.server.close();

    const third = await startTestServer(cleanups, { dataDir, config });
    const reprobed = await scriptedEntry(third);
    expect(reprobed).toMatchObject({ status: "ready", models: probed.models });
    expect(reprobed.probed_at).not.toBe(probed.probed_at);
  }, 180_000);

  it("finds a custom agent that only a project's node_modules/.bin has when the snapshot names that project", async () => {
    const dataDir = tempDir(cleanups);
    const repository = makeRepository(cleanups);
    const launcher = join(repository, "node_modules", ".bin", "only-here-agent");
    mkdirSync(dirname(launcher), { recursive: true });
    const command = scriptedAcpAgentCommand("normal");
    writeFileSync(launcher, `#!/bin/sh\nexec ${command.map((part) => `'${part}'`).join(" ")}\n`);
    chmodSync(launcher, 0o755);
    writeFileSync(
      join(dataDir, "providers.json"),
      JSON.stringify({ providers: { local: { extends: "acp", command: ["only-here-agent"] } } }),
    );
    const harness = await startTestServer(cleanups, { dataDir, config: { workspaceAgent: false } });
    const project = await harness.api<Project>("POST", ServerPath.projects, {
      body: { repository_path: repository },
    });
    expect(project.status).toBe(201);

    const withProject = await settledSnapshot(
      harness,
      `${ServerPath.providersSnapshot}?project_id=${project.body.id}`,
    );
    expect(withProject.status).toBe(200);
    expect(entry(withProject.body, "local")).toMatchObject({
      status: "ready",
      resolved_path: launcher,
    });
    const without = await harness.api<ProvidersSnapshot>("GET", ServerPath.providersSnapshot);
    expect(entry(without.body, "local")).toMatchObject({ status: "not_installed" });
    const unknown = await harness.api(
      "GET",
      `${ServerPath.providersSnapshot}?project_id=00000000-0000-4000-8000-000000000000`,
    );
    expect(unknown.status).toBe(404);
  });

  it.each(backends)(
    "on $backend, shows codex ready when the server has an upstream for its type: the probe gets the proxy settings a session gets, its token revoked after",
    async ({ backend }) => {
      const dataDir = tempDir(cleanups);
      writeFileSync(
        join(dataDir, "providers.json"),
        JSON.stringify({
          providers: {
            // Like codex-acp without a login: no session unless pointed at a model provider, and
            // no --version.
            codex: { command: scriptedAcpAgentCommand("proxy-required", { noVersion: true }) },
          },
        }),
      );
      const harness = await startTestServer(cleanups, {
        dataDir,
        config: {
          workspaceAgent: false,
          databaseUrl: await databaseUrlFor(cleanups, backend),
          modelUpstreams: {
            codex: { kind: "openai", baseUrl: "http://127.0.0.1:9/v1", apiKey: "sk-not-used-0123" },
          },
        },
      });
      const snapshot = await settledSnapshot(harness);
      expect(entry(snapshot.body, "codex")).toMatchObject({ status: "ready", last_error: null });
      const tokens = await harness.server.database.query<{ job_id: string; revoked_at: unknown }>(
        "select job_id, revoked_at from model_tokens",
      );
      const probeTokens = tokens.rows.filter((row) =>
        row.job_id.startsWith("provider-probe:codex:"),
      );
      expect(probeTokens.length).toBeGreaterThan(0);
      expect(probeTokens.every((row) => row.revoked_at !== null)).toBe(true);
      const diagnostic = await fetch(
        `${harness.server.url}${serverPath(ServerPath.providerDiagnostic, { provider_id: "codex" })}`,
      );
      expect(diagnostic.status).toBe(200);
      const text = await diagnostic.text();
      expect(text).not.toContain("not supported");
      expect(text).not.toContain("sk-not-used");
    },
  );

  it("starts with a broken providers file and reports it as a diagnostic", async () => {
    const dataDir = tempDir(cleanups);
    writeFileSync(join(dataDir, "providers.json"), "{ this is not json");
    const harness = await startTestServer(cleanups, { dataDir, config: { workspaceAgent: false } });
    // Logged at startup, before anything asked for the providers.
    expect(harness.logs()).toContain("providers config problem");
    expect(harness.logs()).toContain("not valid JSON");
    expect((await harness.api("GET", ServerPath.health)).status).toBe(200);
    const document = await harness.api<ProvidersConfigResponse>("GET", ServerPath.providersConfig);
    expect(document.status).toBe(200);
    expect(JSON.stringify(document.body.diagnostics)).toContain("providers.json");
    const snapshot = await harness.api<ProvidersSnapshot>("GET", ServerPath.providersSnapshot);
    expect(entry(snapshot.body, "deckhand")).toBeTruthy();
  });

  it("requires the admin token for provider routes when auth is on", async () => {
    const adminToken = "providers-admin-token-0123456789";
    const harness = await startTestServer(cleanups, {
      dataDir: tempDir(cleanups),
      config: { workspaceAgent: false, requireAuth: true, adminToken },
    });
    const refused = await fetch(`${harness.server.url}${ServerPath.providersConfig}`);
    expect(refused.status).toBe(401);
    const allowed = await fetch(`${harness.server.url}${ServerPath.providersConfig}`, {
      headers: { [WireHeader.authorization]: `Bearer ${adminToken}` },
    });
    expect(allowed.status).toBe(200);
  });
});
