import { chmodSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { DECKHAND_SECRET_ENVIRONMENT } from "@deckhand/secrets";
import { OPENCODE_HOSTED_MODEL, scriptedAcpAgentCommand } from "@deckhand/testkit";
import { MODEL_TOKEN_PREFIX, WireEnv, WireHeader } from "@deckhand/wire";
import { afterEach, describe, expect, it } from "vitest";
import {
  ANSWERING_AGENT_START_MS,
  cleanUp,
  createTestService,
  runningScriptedAgents,
  scriptedProvider,
  temporaryDirectory,
  writeConfig,
} from "../test/support.ts";
import { MemoryProbeStore } from "./probe-store.ts";
import { ProvidersError } from "./providers-error.ts";
import { BUILTIN_PROVIDERS } from "./registry.ts";

const builtinIds = BUILTIN_PROVIDERS.map((provider) => provider.id);

afterEach(async () => {
  await cleanUp();
  expect(runningScriptedAgents()).toEqual([]);
});

function entryOf(snapshot: { providers: { id: string }[] }, id: string) {
  return snapshot.providers.find((provider) => provider.id === id) as
    | Awaited<ReturnType<ReturnType<typeof createTestService>["snapshot"]>>["providers"][number]
    | undefined;
}

describe("the snapshot", () => {
  it("shows the scripted agent, configured as a custom provider, ready with models, modes and commands", async () => {
    const service = createTestService();
    writeConfig(service.configPath, { providers: { scripted: scriptedProvider("normal") } });
    const snapshot = await service.snapshot();
    expect(snapshot.diagnostics).toEqual([]);
    expect(snapshot.providers.map((provider) => provider.id)).toEqual([...builtinIds, "scripted"]);
    const scripted = entryOf(snapshot, "scripted")!;
    expect(scripted).toMatchObject({
      label: "Scripted normal",
      transport: "acp",
      builtin: false,
      enabled: true,
      status: "ready",
      version: "1.2.3",
      current_model: "scripted-large",
      current_mode: "ask",
      last_error: null,
      resolved_path: process.execPath,
    });
    expect(scripted.models.map((model) => model.id)).toEqual(["scripted-large", "scripted-small"]);
    expect(scripted.modes.map((mode) => mode.id)).toEqual(["ask", "code"]);
    expect(scripted.commands.map((command) => [command.name, command.kind])).toEqual([
      ["review", "command"],
      ["plan", "command"],
      ["release-notes", "skill"],
    ]);
    expect(scripted.probed_at).not.toBeNull();
  });

  it("gives built-ins that are not installed, the native agent and their hints without probing", async () => {
    const service = createTestService({ modelUpstreamConfigured: false });
    const snapshot = await service.snapshot();
    expect(snapshot.providers.map((provider) => [provider.id, provider.status])).toEqual([
      ["deckhand", "error"],
      ["codex", "not_installed"],
      ["claude", "not_installed"],
      ["gemini", "not_installed"],
      ["opencode", "not_installed"],
      ["goose", "not_installed"],
      ["qwen", "not_installed"],
    ]);
    expect(entryOf(snapshot, "deckhand")!.last_error).toContain("no model upstream");
    expect(entryOf(snapshot, "codex")!.last_error).toBe(
      "codex-acp was not found on PATH; install it with: npm install -g @zed-industries/codex-acp",
    );
    expect(service.store.saves).toBe(0);
    const ready = createTestService({ modelUpstreamConfigured: () => true });
    expect(entryOf(await ready.snapshot(), "deckhand")!.status).toBe("ready");
  });

  it("lists the native agent's models as configured, the first as current, without probing", async () => {
    const service = createTestService({
      modelUpstreamConfigured: true,
      nativeModels: ["gpt-5.1-codex", "gpt-5-mini"],
    });
    const native = entryOf(await service.snapshot(), "deckhand")!;
    expect(native.models).toEqual([
      { id: "gpt-5.1-codex", name: "gpt-5.1-codex", description: null },
      { id: "gpt-5-mini", name: "gpt-5-mini", description: null },
    ]);
    expect(native.current_model).toBe("gpt-5.1-codex");
    expect(native.modes).toEqual([]);
    expect(service.store.saves).toBe(0);
  });

  it("finds a built-in's command in the project's node_modules/.bin and probes it", async () => {
    const project = temporaryDirectory();
    mkdirSync(join(project, "node_modules", ".bin"), { recursive: true });
    const launcher = join(project, "node_modules", ".bin", "codex-acp");
    const command = scriptedAcpAgentCommand("normal", { agentVersion: "0.16.0" });
    writeFileSync(
      launcher,
      `#!/bin/sh\nexec ${command.map((part) => `'${part}'`).join(" ")} "$@"\n`,
    );
    chmodSync(launcher, 0o755);
    const service = createTestService({ projectDir: project });
    const codex = entryOf(await service.snapshot(), "codex")!;
    expect(codex).toMatchObject({ status: "ready", resolved_path: launcher, version: "0.16.0" });
  });

  it("shows a disabled provider as disabled, without probing it, and the setting survives a restart", async () => {
    const first = createTestService();
    writeConfig(first.configPath, { providers: { scripted: scriptedProvider("normal") } });
    await first.patchConfig({ providers: { scripted: { enabled: false } } });
    expect(entryOf(await first.snapshot(), "scripted")).toMatchObject({
      status: "disabled",
      enabled: false,
    });
    const restarted = createTestService({ configPath: first.configPath });
    expect(entryOf(await restarted.snapshot(), "scripted")!.status).toBe("disabled");
    expect(first.store.saves + restarted.store.saves).toBe(0);
    // Enabling keeps the custom provider's command: the patch merges field by field.
    await restarted.patchConfig({ providers: { scripted: { enabled: null } } });
    expect(JSON.parse(readFileSync(first.configPath, "utf8")).providers.scripted).toEqual(
      scriptedProvider("normal"),
    );
    expect(entryOf(await restarted.snapshot(), "scripted")!.status).toBe("ready");
  });

  it("stays up with the built-ins and a diagnostic when the config file is broken", async () => {
    const service = createTestService();
    writeConfig(service.configPath, '{"providers": {"codex": ');
    const snapshot = await service.snapshot();
    expect(snapshot.providers.map((provider) => provider.id)).toEqual(builtinIds);
    expect(snapshot.diagnostics).toEqual([
      {
        file: service.configPath,
        field: "",
        message: expect.stringContaining("not valid JSON"),
      },
    ]);
  });

  it("ends every failure mode as error with a diagnostic, and a hanging agent holds up no one", async () => {
    // The agents that answer get all the time a busy machine needs to start them; the two that
    // hang are cut off after a bound of their own, long enough that one after the other (twice
    // the bound) stays apart from both at once (the bound and the others' start) under load.
    const hangMs = 8_000;
    const service = createTestService({
      startTimeouts: {
        initializeMs: ANSWERING_AGENT_START_MS,
        sessionMs: ANSWERING_AGENT_START_MS,
        providers: { hang: { initializeMs: hangMs }, stuck: { initializeMs: hangMs } },
      },
    });
    writeConfig(service.configPath, {
      providers: {
        normal: scriptedProvider("normal"),
        hang: scriptedProvider("hang"),
        stuck: scriptedProvider("hang"),
        crash: scriptedProvider("crash", {
          versionArgs: [...scriptedAcpAgentCommand("crash").slice(1, 3), "--version"],
        }),
        garbage: scriptedProvider("garbage"),
        auth: scriptedProvider("auth-required"),
      },
    });
    const started = Date.now();
    const snapshot = await service.snapshot();
    // Concurrent: both hanging agents are cut off within one bound, not one after the other.
    expect(Date.now() - started).toBeLessThan(2 * hangMs);
    const statuses = Object.fromEntries(
      snapshot.providers.slice(builtinIds.length).map((entry) => [entry.id, entry.status]),
    );
    expect(statuses).toEqual({
      normal: "ready",
      hang: "error",
      stuck: "error",
      crash: "error",
      garbage: "error",
      auth: "error",
    });
    expect(entryOf(snapshot, "hang")!.last_error).toContain("no answer to initialize");
    expect(entryOf(snapshot, "stuck")!.last_error).toContain("no answer to initialize");
    expect(entryOf(snapshot, "crash")!.last_error).toContain("exited (code 3)");
    expect(entryOf(snapshot, "garbage")!.last_error).toContain("not ACP JSON");
    expect(entryOf(snapshot, "auth")!.last_error).toContain("needs a login");
    const diagnostic = await service.diagnostic("crash");
    expect(diagnostic).toContain("last probe error: the agent exited (code 3) during initialize");
    expect(diagnostic).toContain("crashing in initialize as asked");
    expect(diagnostic).toContain("version output (");
    expect(diagnostic).toContain("--version, exit 0):\nscripted-acp-agent 1.2.3");
  });

  it("bounds each agent's start by its own timeouts, over everyone's", async () => {
    const slowly = (extra: Record<string, unknown> = {}) =>
      scriptedProvider("normal", {
        command: scriptedAcpAgentCommand("normal", {
          initializeDelayMs: 1_000,
          sessionDelayMs: 1_000,
        }),
        ...extra,
      });
    const service = createTestService({
      startTimeouts: {
        initializeMs: 600,
        sessionMs: 600,
        providers: {
          patient: { initializeMs: ANSWERING_AGENT_START_MS, sessionMs: ANSWERING_AGENT_START_MS },
        },
      },
    });
    writeConfig(service.configPath, {
      providers: { patient: slowly(), impatient: slowly() },
    });
    const snapshot = await service.snapshot();
    expect(entryOf(snapshot, "patient")).toMatchObject({ status: "ready", version: "1.2.3" });
    expect(entryOf(snapshot, "impatient")).toMatchObject({
      status: "error",
      last_error: "no answer to initialize within 600 ms; the agent looks stuck",
    });
    // Sessions start the agent with the same bounds.
    expect((await service.resolve("patient")).startTimeouts).toEqual({
      initializeMs: ANSWERING_AGENT_START_MS,
      sessionMs: ANSWERING_AGENT_START_MS,
    });
    expect((await service.resolve("impatient")).startTimeouts).toEqual({
      initializeMs: 600,
      sessionMs: 600,
    });
  });

  it("shows an agent that is slow to start as starting, not error, and ready once it answered", async () => {
    const service = createTestService({ snapshotWaitMs: 300 });
    writeConfig(service.configPath, {
      providers: {
        slow: scriptedProvider("normal", {
          command: scriptedAcpAgentCommand("normal", { initializeDelayMs: 1_500 }),
        }),
      },
    });
    const first = await service.snapshot();
    // The snapshot does not wait the whole start: the agent has not answered yet.
    expect(entryOf(first, "slow")).toMatchObject({ status: "starting", last_error: null });
    // The probe goes on; a later snapshot joins it and shows the result.
    let later = first;
    const deadline = Date.now() + ANSWERING_AGENT_START_MS;
    while (entryOf(later, "slow")!.status === "starting" && Date.now() < deadline) {
      later = await service.snapshot();
    }
    expect(entryOf(later, "slow")).toMatchObject({ status: "ready", version: "1.2.3" });
  });

  it("answers a refresh of one provider while another's refresh hangs, showing that one loading", async () => {
    const service = createTestService({
      startTimeouts: {
        initializeMs: ANSWERING_AGENT_START_MS,
        sessionMs: ANSWERING_AGENT_START_MS,
        providers: { hang: { initializeMs: 8_000 } },
      },
    });
    writeConfig(service.configPath, {
      providers: { normal: scriptedProvider("normal"), hang: scriptedProvider("hang") },
    });
    const hanging = service.refresh({ ids: ["hang"] });
    const normal = await service.refresh({ ids: ["normal"] });
    // It did not wait for the other refresh: that one is still running.
    expect(entryOf(normal, "normal")!.status).toBe("ready");
    expect(entryOf(normal, "hang")!.status).toBe("loading");
    expect(entryOf(await hanging, "hang")!.status).toBe("error");
  });
});

describe("the probe cache", () => {
  it("probes once within the TTL, persists through the store, and a restart does not re-probe", async () => {
    let clock = new Date("2026-01-01T00:00:00Z");
    const store = new MemoryProbeStore();
    const service = createTestService({ probeStore: store, now: () => clock });
    writeConfig(service.configPath, { providers: { scripted: scriptedProvider("normal") } });
    const first = entryOf(await service.snapshot(), "scripted")!;
    expect(store.saves).toBe(1);
    expect(store.records.get("scripted")).toMatchObject({
      providerId: "scripted",
      status: "ready",
      error: null,
      probedAt: clock,
    });
    await service.snapshot();
    expect(store.saves).toBe(1);

    clock = new Date("2026-01-01T23:00:00Z");
    const restarted = createTestService({
      configPath: service.configPath,
      probeStore: store,
      now: () => clock,
    });
    expect(entryOf(await restarted.snapshot(), "scripted")).toEqual(first);
    expect(store.saves).toBe(1);

    // Past the TTL, the next snapshot probes again.
    clock = new Date("2026-01-02T00:00:01Z");
    await restarted.snapshot();
    expect(store.saves).toBe(2);
  });

  it("probes again when the command or env changes, and when forced", async () => {
    const service = createTestService();
    writeConfig(service.configPath, { providers: { scripted: scriptedProvider("normal") } });
    await service.snapshot();
    expect(service.store.saves).toBe(1);
    await service.patchConfig({ providers: { scripted: { env: { EXTRA: "1" } } } });
    await service.snapshot();
    expect(service.store.saves).toBe(2);
    await service.refresh({ ids: ["scripted"] });
    expect(service.store.saves).toBe(2);
    await service.refresh({ ids: ["scripted"], force: true });
    expect(service.store.saves).toBe(3);
  });

  it("ignores a stored result that does not parse, and a store that fails", async () => {
    const store = new MemoryProbeStore();
    const service = createTestService({ probeStore: store });
    writeConfig(service.configPath, { providers: { scripted: scriptedProvider("normal") } });
    await service.snapshot();
    const record = store.records.get("scripted")!;
    store.records.set("scripted", { ...record, result: { models: "garbled" } as never });
    const restarted = createTestService({ configPath: service.configPath, probeStore: store });
    expect(entryOf(await restarted.snapshot(), "scripted")!.status).toBe("ready");
    expect(store.saves).toBe(2);

    const broken = createTestService({
      configPath: service.configPath,
      probeStore: {
        load: () => Promise.reject(new Error("database down")),
        save: () => Promise.reject(new Error("database down")),
      },
    });
    expect(entryOf(await broken.snapshot(), "scripted")!.status).toBe("ready");
  });

  it("shows loading only for a provider whose forced refresh is running", async () => {
    const service = createTestService();
    writeConfig(service.configPath, {
      providers: {
        slow: scriptedProvider("slow-commands", {
          command: scriptedAcpAgentCommand("slow-commands", { commandsDelayMs: 600 }),
        }),
        other: scriptedProvider("normal"),
      },
    });
    const before = await service.snapshot();
    expect(entryOf(before, "slow")!.status).toBe("ready");
    const refreshing = service.refresh({ ids: ["slow"], force: true });
    await new Promise((resolve) => setTimeout(resolve, 100));
    const during = await service.snapshot();
    expect(entryOf(during, "slow")).toMatchObject({ status: "loading", version: "1.2.3" });
    expect(entryOf(during, "other")!.status).toBe("ready");
    expect(entryOf(await refreshing, "slow")!.status).toBe("ready");
    expect(entryOf(await service.snapshot(), "slow")!.status).toBe("ready");
  });

  it("refuses to refresh a provider that does not exist", async () => {
    const service = createTestService();
    await expect(service.refresh({ ids: ["nope"] })).rejects.toMatchObject({
      code: "unknown_provider",
    });
  });
});

describe("patchConfig", () => {
  it("loses no update when patches race, and keeps fields Deckhand does not know", async () => {
    const service = createTestService();
    writeConfig(service.configPath, { $comment: "mine", providers: { codex: { note: "keep" } } });
    await Promise.all(
      builtinIds.map((id, index) =>
        service.patchConfig({ providers: { [id]: { enabled: index % 2 === 0 } } }),
      ),
    );
    const written = JSON.parse(readFileSync(service.configPath, "utf8"));
    expect(written.$comment).toBe("mine");
    expect(written.providers.codex).toEqual({ note: "keep", enabled: false });
    for (const [index, id] of builtinIds.entries()) {
      expect(written.providers[id].enabled).toBe(index % 2 === 0);
    }
  });

  it("lets exactly one of several patches made against the same ETag win; the rest are stale", async () => {
    const service = createTestService();
    const { etag } = await service.getConfig();
    const results = await Promise.allSettled(
      ["codex", "claude", "gemini", "qwen"].map((id) =>
        service.patchConfig({ providers: { [id]: { enabled: false } } }, { ifMatch: etag }),
      ),
    );
    expect(results.filter((result) => result.status === "fulfilled")).toHaveLength(1);
    for (const result of results) {
      if (result.status === "rejected") {
        expect(result.reason).toBeInstanceOf(ProvidersError);
        expect(result.reason.code).toBe("stale_config");
      }
    }
    const current = await service.getConfig();
    expect(current.etag).not.toBe(etag);
    await service.patchConfig(
      { providers: { goose: { enabled: false } } },
      { ifMatch: current.etag },
    );
    await service.patchConfig({ providers: { goose: { enabled: true } } }, { ifMatch: "*" });
  });

  it("refuses a patch that would add a problem, but not one made despite old problems", async () => {
    const service = createTestService();
    writeConfig(service.configPath, { providers: { codex: { enabled: "yes" } } });
    await expect(
      service.patchConfig({ providers: { claude: { command: "claude" } } }),
    ).rejects.toMatchObject({
      code: "invalid_patch",
      message: expect.stringContaining("providers.claude.command"),
    });
    await expect(service.patchConfig([1] as unknown)).rejects.toMatchObject({
      code: "invalid_patch",
    });
    const patched = await service.patchConfig({ providers: { claude: { enabled: false } } });
    expect(patched.diagnostics.map((diagnostic) => diagnostic.field)).toEqual([
      "providers.codex.enabled",
    ]);
  });

  it("will not patch over a file that is not JSON", async () => {
    const service = createTestService();
    writeConfig(service.configPath, "{ oops");
    await expect(
      service.patchConfig({ providers: { codex: { enabled: false } } }),
    ).rejects.toMatchObject({ code: "unreadable_config" });
    expect(readFileSync(service.configPath, "utf8")).toBe("{ oops");
  });
});

describe("probing agents the model proxy serves", () => {
  /** Proxy access as the server lends it, with a record of every lease and its release. */
  function fakeProxy(servedTypes: string[]) {
    const leases: { agentType: string; token: string; released: boolean }[] = [];
    return {
      leases,
      configured: (agentType: string) => servedTypes.includes(agentType),
      lease: async (agentType: string) => {
        const lease = {
          agentType,
          token: `${MODEL_TOKEN_PREFIX}${"a".repeat(43)}`,
          released: false,
        };
        leases.push(lease);
        return {
          context: {
            proxyUrl: `http://127.0.0.1:9/model-provider/${agentType}`,
            token: lease.token,
            jobId: `provider-probe:${agentType}:${leases.length}`,
          },
          release: async () => {
            lease.released = true;
          },
        };
      },
    };
  }

  it("shows an agent that needs the proxy to open a session ready, its probe launched as sessions launch it", async () => {
    const proxy = fakeProxy(["codex"]);
    const service = createTestService({ modelProxy: proxy });
    writeConfig(service.configPath, {
      providers: { codex: { command: scriptedAcpAgentCommand("proxy-required") } },
    });
    const codex = entryOf(await service.snapshot(), "codex")!;
    expect(codex.last_error).toBeNull();
    expect(codex.status).toBe("ready");
    // One lease for the probe, revoked once the agent stopped.
    expect(proxy.leases).toEqual([expect.objectContaining({ agentType: "codex", released: true })]);
  });

  it("probes again once an upstream serves the agent's type, instead of trusting the result from before", async () => {
    const served: string[] = [];
    const proxy = fakeProxy(served);
    const service = createTestService({
      modelProxy: { ...proxy, configured: (type) => served.includes(type) },
    });
    writeConfig(service.configPath, {
      providers: { codex: { command: scriptedAcpAgentCommand("proxy-required") } },
    });
    expect(entryOf(await service.snapshot(), "codex")!.status).toBe("error");
    served.push("codex");
    expect(entryOf(await service.snapshot(), "codex")!.status).toBe("ready");
  });

  it("says to configure the agent type's upstream, never to put a key in the provider's env, when such an agent wants a login", async () => {
    const service = createTestService({ modelProxy: fakeProxy([]) });
    writeConfig(service.configPath, {
      providers: { codex: { command: scriptedAcpAgentCommand("proxy-required") } },
    });
    const codex = entryOf(await service.snapshot(), "codex")!;
    expect(codex.status).toBe("error");
    expect(codex.last_error).toContain("needs a login");
    expect(codex.last_error).toContain("modelUpstreams.codex");
    expect(codex.last_error).not.toContain("provider's env");
    expect(codex.last_error).not.toContain("credentials");
  });

  it("points opencode at the upstream's models, so its default is no longer opencode's own", async () => {
    const service = createTestService({
      modelProxy: fakeProxy(["opencode"]),
      upstreamModels: (agentType) =>
        agentType === "opencode" ? ["gpt-5.1-codex", "gpt-5-mini"] : [],
    });
    writeConfig(service.configPath, {
      providers: { opencode: { command: scriptedAcpAgentCommand("opencode") } },
    });
    const opencode = entryOf(await service.snapshot(), "opencode")!;
    expect(opencode.status).toBe("ready");
    expect(opencode.current_model).toBe("deckhand/gpt-5.1-codex");
    expect(opencode.models.map((model) => model.id)).toEqual([
      "deckhand/gpt-5.1-codex",
      "deckhand/gpt-5-mini",
    ]);
    expect(opencode.models.map((model) => model.id)).not.toContain(OPENCODE_HOSTED_MODEL);
  });

  it("keeps the own-login advice for an agent the proxy cannot serve", async () => {
    const service = createTestService({ modelProxy: fakeProxy(["codex"]) });
    writeConfig(service.configPath, { providers: { auth: scriptedProvider("auth-required") } });
    expect(entryOf(await service.snapshot(), "auth")!.last_error).toContain(
      "log in with the agent's own CLI",
    );
  });

  it("runs no version command for an agent without one: codex-acp refuses --version", async () => {
    const service = createTestService();
    writeConfig(service.configPath, {
      providers: { codex: { command: scriptedAcpAgentCommand("normal", { noVersion: true }) } },
    });
    await service.snapshot();
    const diagnostic = await service.diagnostic("codex");
    expect(diagnostic).not.toContain("--version");
    expect(diagnostic).not.toContain("not supported");
    expect(diagnostic).toContain(
      "version: 1.2.3 (as the agent reports it in ACP initialize; it has no version command)",
    );
  });

  it("runs a provider's own version arguments instead of its command's", async () => {
    const service = createTestService();
    const [node, ...args] = scriptedAcpAgentCommand("normal", { agentVersion: "4.5.6" });
    writeConfig(service.configPath, {
      providers: {
        custom: {
          extends: "acp",
          command: [node, ...args],
          versionArgs: [...args.slice(0, 2), "--agent-version", "4.5.6", "--version"],
        },
      },
    });
    expect(await service.diagnostic("custom")).toContain(
      " --version, exit 0):\nscripted-acp-agent 4.5.6",
    );
  });
});

describe("the agent environment", () => {
  it("withholds Deckhand's tokens and the named upstream keys from probed agents", async () => {
    const service = createTestService({
      env: {
        PATH: "/usr/bin:/bin",
        UPSTREAM_KEY: "sk-real",
        [WireEnv.adminToken]: "admin-token",
        VISIBLE: "yes",
      },
      withheldEnv: ["UPSTREAM_KEY"],
    });
    const script = `echo key=\${UPSTREAM_KEY:-withheld} admin=\${${WireEnv.adminToken}:-withheld} visible=\${VISIBLE} own=\${OWN}`;
    writeConfig(service.configPath, {
      providers: {
        shell: {
          extends: "acp",
          command: ["/bin/sh", "-c", script],
          env: { OWN: "1" },
          versionArgs: ["-c", script],
        },
      },
    });
    expect(await service.diagnostic("shell")).toContain(
      "key=withheld admin=withheld visible=yes own=1",
    );
  });

  it("withholds the default deny list (well-known upstream keys) and the database URL", async () => {
    const service = createTestService({
      env: {
        PATH: "/usr/bin:/bin",
        OPENAI_API_KEY: "sk-operator-key",
        DATABASE_URL: "postgres://user:pw@db/deckhand",
        VISIBLE: "yes",
      },
    });
    const script = `echo openai=\${OPENAI_API_KEY:-withheld} db=\${DATABASE_URL:-withheld} visible=\${VISIBLE}`;
    writeConfig(service.configPath, {
      providers: {
        shell: { extends: "acp", command: ["/bin/sh", "-c", script], versionArgs: ["-c", script] },
      },
    });
    expect(await service.diagnostic("shell")).toContain("openai=withheld db=withheld visible=yes");
  });
});

/** An executable at `<directory>/<relative>` that starts the scripted agent. */
function launcherAt(directory: string, relative: string): string {
  const launcher = join(directory, relative);
  mkdirSync(dirname(launcher), { recursive: true });
  const command = scriptedAcpAgentCommand("normal");
  writeFileSync(launcher, `#!/bin/sh\nexec ${command.map((part) => `'${part}'`).join(" ")} "$@"\n`);
  chmodSync(launcher, 0o755);
  return launcher;
}

describe("warming up at startup", () => {
  function recordingLogger() {
    const lines: { level: string; message: string; fields: Record<string, unknown> }[] = [];
    const logger = {
      info: (message: string, fields: Record<string, unknown> = {}) =>
        lines.push({ level: "info", message, fields }),
      warn: (message: string, fields: Record<string, unknown> = {}) =>
        lines.push({ level: "warn", message, fields }),
    };
    return { lines, logger };
  }

  it("logs the config file's problems before any snapshot is asked for", async () => {
    const { lines, logger } = recordingLogger();
    const service = createTestService({ logger });
    writeConfig(service.configPath, { providers: { codex: { enabled: "no" } } });
    await service.warmUp();
    expect(lines).toContainEqual({
      level: "warn",
      message: "providers config problem",
      fields: expect.objectContaining({ field: "providers.codex.enabled" }),
    });
    // Logged once, not again when the same problems are read again.
    await service.getConfig();
    expect(lines.filter((line) => line.message === "providers config problem")).toHaveLength(1);
  });

  it("probes due providers in the background, and a snapshot meanwhile waits for that probe", async () => {
    const service = createTestService();
    writeConfig(service.configPath, {
      providers: {
        scripted: scriptedProvider("normal"),
        off: scriptedProvider("normal", { enabled: false }),
      },
    });
    await service.warmUp();
    // warmUp does not wait for the probe; the snapshot joins it instead of starting another.
    expect(service.store.saves).toBe(0);
    const scripted = entryOf(await service.snapshot(), "scripted")!;
    expect(scripted).toMatchObject({ status: "ready" });
    expect(scripted.models.length).toBeGreaterThan(0);
    expect(service.store.saves).toBe(1);
    expect(service.store.records.has("off")).toBe(false);
  });

  it("probes nothing at startup when the cached results are fresh", async () => {
    const store = new MemoryProbeStore();
    const first = createTestService({ probeStore: store });
    writeConfig(first.configPath, { providers: { scripted: scriptedProvider("normal") } });
    await first.snapshot();
    expect(store.saves).toBe(1);
    const restarted = createTestService({ configPath: first.configPath, probeStore: store });
    await restarted.warmUp();
    // A probe started by the warm-up would be joined here and saved.
    expect(entryOf(await restarted.snapshot(), "scripted")!.status).toBe("ready");
    expect(store.saves).toBe(1);
  });
});

describe("project-aware resolution", () => {
  it("finds a command that only a project's node_modules/.bin has in a snapshot for that project", async () => {
    const project = temporaryDirectory();
    const launcher = launcherAt(project, "node_modules/.bin/only-here-agent");
    const service = createTestService({
      projectDirectory: async (projectId) => (projectId === "p1" ? project : null),
    });
    writeConfig(service.configPath, {
      providers: { local: { extends: "acp", command: ["only-here-agent"] } },
    });
    const global = entryOf(await service.snapshot(), "local")!;
    expect(global).toMatchObject({ status: "not_installed", resolved_path: null });
    expect(global.last_error).toBe("only-here-agent was not found on PATH");
    const forProject = entryOf(await service.snapshot({ projectId: "p1" }), "local")!;
    expect(forProject).toMatchObject({ status: "ready", resolved_path: launcher });
    expect(forProject.models.length).toBeGreaterThan(0);
    // The project's probe result does not leak into the snapshot without a project.
    expect(entryOf(await service.snapshot(), "local")!.status).toBe("not_installed");
    await expect(service.snapshot({ projectId: "p2" })).rejects.toMatchObject({
      code: "unknown_project",
    });
    const noProjects = createTestService();
    await expect(noProjects.snapshot({ projectId: "p1" })).rejects.toMatchObject({
      code: "unknown_project",
    });
  });

  it("keeps each project's probe result: alternating snapshots do not probe again", async () => {
    const first = temporaryDirectory();
    const second = temporaryDirectory();
    launcherAt(first, "node_modules/.bin/only-here-agent");
    launcherAt(second, "node_modules/.bin/only-here-agent");
    const projects: Record<string, string> = { first, second };
    const service = createTestService({
      projectDirectory: async (projectId) => projects[projectId] ?? null,
    });
    writeConfig(service.configPath, {
      providers: { local: { extends: "acp", command: ["only-here-agent"] } },
    });
    await service.snapshot({ projectId: "first" });
    await service.snapshot({ projectId: "second" });
    expect(service.store.saves).toBe(2);
    await service.snapshot({ projectId: "first" });
    await service.snapshot({ projectId: "second" });
    expect(service.store.saves).toBe(2);
  });

  it("starts a session's agent from its worktree's node_modules/.bin before PATH", async () => {
    const worktree = temporaryDirectory();
    const launcher = launcherAt(worktree, "node_modules/.bin/only-here-agent");
    const service = createTestService();
    writeConfig(service.configPath, {
      providers: { local: { extends: "acp", command: ["only-here-agent", "--acp"] } },
    });
    expect(await service.resolve("local", { projectDir: worktree })).toMatchObject({
      executable: launcher,
      args: ["--acp"],
    });
    await expect(service.resolve("local")).rejects.toMatchObject({
      code: "provider_not_installed",
      message: expect.stringContaining("only-here-agent was not found on PATH"),
    });
  });

  it("resolves a relative command against the project, else the config file's directory, never the working directory", async () => {
    const project = temporaryDirectory();
    const service = createTestService();
    const configDir = dirname(service.configPath);
    writeConfig(service.configPath, {
      providers: { local: { extends: "acp", command: ["./agents/run-agent"] } },
    });
    const missing = entryOf(await service.snapshot(), "local")!;
    expect(missing).toMatchObject({ status: "not_installed" });
    expect(missing.last_error).toBe(`./agents/run-agent was not found at ${configDir}`);
    const beside = launcherAt(configDir, "agents/run-agent");
    expect(entryOf(await service.snapshot(), "local")).toMatchObject({
      status: "ready",
      resolved_path: beside,
    });
    const inProject = launcherAt(project, "agents/run-agent");
    expect((await service.resolve("local", { projectDir: project })).executable).toBe(inProject);
    expect(process.cwd()).not.toBe(configDir);
  });
});

describe("list", () => {
  it("names every provider of the config with its transport, probing nothing", async () => {
    const service = createTestService();
    writeConfig(service.configPath, {
      providers: { scripted: scriptedProvider("hang"), goose: { enabled: false } },
    });
    const listed = await service.list();
    expect(listed.map((provider) => provider.id)).toEqual([...builtinIds, "scripted"]);
    expect(listed.find((provider) => provider.id === "deckhand")).toMatchObject({
      transport: "native",
    });
    expect(listed.find((provider) => provider.id === "goose")).toMatchObject({ enabled: false });
    expect(listed.at(-1)).toEqual({
      id: "scripted",
      label: "Scripted hang",
      transport: "acp",
      enabled: true,
    });
    expect(runningScriptedAgents()).toEqual([]);
  });
});

describe("resolve", () => {
  const proxy = {
    proxyUrl: "http://127.0.0.1:7420/model-provider/codex",
    token: "dhmp_secret",
    jobId: "job-1",
  };

  it("points a built-in at the model-provider proxy with the token only in the environment", async () => {
    const project = temporaryDirectory();
    mkdirSync(join(project, "node_modules", ".bin"), { recursive: true });
    const launcher = join(project, "node_modules", ".bin", "codex-acp");
    writeFileSync(launcher, "#!/bin/sh\n");
    chmodSync(launcher, 0o755);
    const service = createTestService({ projectDir: project });
    const resolved = await service.resolve("codex", { proxy });
    expect(resolved).toMatchObject({
      id: "codex",
      transport: "acp",
      executable: launcher,
      agentType: "codex",
      unset: [...DECKHAND_SECRET_ENVIRONMENT, "OPENAI_API_KEY"],
      env: { [WireEnv.modelProviderToken]: "dhmp_secret", [WireEnv.jobId]: "job-1" },
    });
    expect(resolved.args).toContain(
      'model_providers.deckhand.base_url="http://127.0.0.1:7420/model-provider/codex"',
    );
    expect(resolved.args).toContain(
      `model_providers.deckhand.env_http_headers={"${WireHeader.jobId}"="${WireEnv.jobId}"}`,
    );
    expect(resolved.args.join(" ")).not.toContain("dhmp_secret");
  });

  it("gives a custom provider's command and env, and explains what cannot be started", async () => {
    const service = createTestService({ modelUpstreamConfigured: false });
    writeConfig(service.configPath, {
      providers: {
        scripted: scriptedProvider("normal", { env: { A: "1" } }),
        off: scriptedProvider("normal", { enabled: false }),
      },
    });
    const [, ...args] = scriptedAcpAgentCommand("normal");
    expect(await service.resolve("scripted", { proxy })).toEqual({
      id: "scripted",
      label: "Scripted normal",
      transport: "acp",
      executable: process.execPath,
      args,
      env: { A: "1" },
      unset: [...DECKHAND_SECRET_ENVIRONMENT],
      agentType: null,
      // No proxy support: it keeps its own login, so it gets the internet, not loopback.
      profile: { writable: [], readable: [], network: { internet: true, modelProxy: false } },
      serveFileReads: true,
      startTimeouts: {
        initializeMs: ANSWERING_AGENT_START_MS,
        sessionMs: ANSWERING_AGENT_START_MS,
      },
      loginAdvice:
        "log in with the agent's own CLI, or configure its credentials in the provider's env",
    });
    await expect(service.resolve("off")).rejects.toMatchObject({ code: "provider_disabled" });
    await expect(service.resolve("claude")).rejects.toMatchObject({
      code: "provider_not_installed",
    });
    await expect(service.resolve("deckhand")).rejects.toMatchObject({
      code: "provider_unavailable",
    });
    await expect(service.resolve("nope")).rejects.toMatchObject({ code: "unknown_provider" });
  });

  it("resolves the native agent when a model upstream is configured", async () => {
    const service = createTestService();
    expect(await service.resolve("deckhand")).toMatchObject({
      transport: "native",
      executable: null,
    });
  });
});
