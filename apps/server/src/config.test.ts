import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { parseServerArguments } from "./arguments.ts";
import {
  ADMIN_TOKEN_ENV,
  ALLOWED_HOSTS_ENV,
  ALLOWED_ORIGINS_ENV,
  DATA_DIR_ENV,
  DATABASE_URL_ENV,
  LISTEN_ENV,
  LOG_LEVEL_ENV,
  PUBLIC_URL_ENV,
  resolveServerConfig,
  serverOriginPolicy,
} from "./config.ts";
import { ServerError } from "./server-error.ts";

const dirs: string[] = [];
function dataDir(config?: unknown): string {
  const dir = mkdtempSync(join(tmpdir(), "deckhand-server-config-"));
  dirs.push(dir);
  if (config !== undefined) writeFileSync(join(dir, "config.json"), JSON.stringify(config));
  return dir;
}
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function configError(run: () => unknown): ServerError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ServerError);
    expect((error as ServerError).code).toBe("invalid_config");
    return error as ServerError;
  }
  throw new Error("expected a configuration error");
}

describe("resolveServerConfig", () => {
  it("defaults to loopback port 7420, ~/.deckhand, the embedded database and a workspace agent", () => {
    const config = resolveServerConfig({}, { environment: {}, homeDir: "/home/someone" });
    expect(config).toMatchObject({
      host: "127.0.0.1",
      port: 7420,
      dataDir: "/home/someone/.deckhand",
      databaseUrl: null,
      adminToken: null,
      modelUpstreams: {},
      workspaceAgent: true,
      logLevel: "info",
    });
  });

  it("reads the kubernetes section, and names the field of a bad one", () => {
    const kubernetes = {
      namespace: "steps",
      workVolume: { claimName: "executor-data", mountPath: "/data" },
      resources: { limits: { memory: "2Gi" } },
    };
    expect(
      resolveServerConfig({ dataDir: dataDir({ kubernetes }) }, { environment: {} }).kubernetes,
    ).toEqual(kubernetes);
    expect(
      resolveServerConfig({ dataDir: dataDir({}) }, { environment: {} }).kubernetes,
    ).toBeNull();
    const error = configError(() =>
      resolveServerConfig(
        { dataDir: dataDir({ kubernetes: { ...kubernetes, namespace: "Not A Namespace" } }) },
        { environment: {} },
      ),
    );
    expect(error.message).toMatch(/kubernetes\.namespace: must be a lower-case DNS label/);
  });

  it("prefers flags over the environment over config.json", () => {
    const dir = dataDir({ listen: "127.0.0.1:9000", databaseUrl: "postgres://file/db" });
    const fromFile = resolveServerConfig({ dataDir: dir }, { environment: {} });
    expect(fromFile).toMatchObject({ port: 9000, databaseUrl: "postgres://file/db" });
    const fromEnv = resolveServerConfig(
      { dataDir: dir },
      { environment: { [DATABASE_URL_ENV]: "postgres://env/db" } },
    );
    expect(fromEnv.databaseUrl).toBe("postgres://env/db");
    const fromFlags = resolveServerConfig(
      { dataDir: dir, listen: "127.0.0.1:0", databaseUrl: "postgresql://flag/db" },
      { environment: { [DATABASE_URL_ENV]: "postgres://env/db" } },
    );
    expect(fromFlags).toMatchObject({ port: 0, databaseUrl: "postgresql://flag/db" });
  });

  it("takes listen address, data directory and log level from flags, then the environment, then config.json", () => {
    const fileDir = dataDir({ listen: "127.0.0.1:9000", logLevel: "warn" });
    const envDir = dataDir({ listen: "127.0.0.1:9001", logLevel: "error" });
    const environment = {
      [LISTEN_ENV]: "127.0.0.1:9100",
      [DATA_DIR_ENV]: envDir,
      [LOG_LEVEL_ENV]: "debug",
    };
    // The file alone.
    expect(resolveServerConfig({ dataDir: fileDir }, { environment: {} })).toMatchObject({
      port: 9000,
      dataDir: fileDir,
      logLevel: "warn",
    });
    // The environment over the file; its data directory is where the file is read from.
    expect(resolveServerConfig({}, { environment })).toMatchObject({
      port: 9100,
      dataDir: envDir,
      logLevel: "debug",
    });
    expect(resolveServerConfig({}, { environment: { [DATA_DIR_ENV]: envDir } })).toMatchObject({
      port: 9001,
      logLevel: "error",
    });
    // Flags over both.
    expect(
      resolveServerConfig(
        (({ help: _help, ...flags }) => flags)(
          parseServerArguments([
            "--listen",
            "127.0.0.1:0",
            "--data-dir",
            fileDir,
            "--log-level",
            "silent",
          ]),
        ),
        { environment },
      ),
    ).toMatchObject({ port: 0, dataDir: fileDir, logLevel: "silent" });
    // A relative DECKHAND_DATA_DIR is taken from the working directory; an empty one is unset.
    expect(
      resolveServerConfig({}, { environment: { [DATA_DIR_ENV]: "data" }, cwd: fileDir }).dataDir,
    ).toBe(join(fileDir, "data"));
    expect(
      resolveServerConfig(
        {},
        { environment: { [DATA_DIR_ENV]: "", [LISTEN_ENV]: "" }, homeDir: "/home/someone" },
      ),
    ).toMatchObject({ dataDir: "/home/someone/.deckhand", port: 7420 });
  });

  it("names the variable, in one line, for a bad listen address or log level from the environment", () => {
    const dir = dataDir({ listen: "127.0.0.1:9000" });
    const listenError = configError(() =>
      resolveServerConfig({ dataDir: dir }, { environment: { [LISTEN_ENV]: "nope" } }),
    );
    expect(listenError.message).toContain(`${LISTEN_ENV} "nope" is not host:port`);
    expect(listenError.message).not.toContain("\n");
    const levelError = configError(() =>
      resolveServerConfig({ dataDir: dir }, { environment: { [LOG_LEVEL_ENV]: "loud" } }),
    );
    expect(levelError.message).toBe(
      `${LOG_LEVEL_ENV} "loud" is not a log level; use one of fatal, error, warn, info, debug, silent`,
    );
    // A flag that is fine wins before the bad variable is looked at.
    expect(
      resolveServerConfig(
        { dataDir: dir, listen: "127.0.0.1:0" },
        { environment: { [LISTEN_ENV]: "nope" } },
      ).port,
    ).toBe(0);
    // A bad listen address in the file names the file.
    const fileDir = dataDir({ listen: "nope" });
    expect(
      configError(() => resolveServerConfig({ dataDir: fileDir }, { environment: {} })).message,
    ).toContain('listen in config.json "nope"');
  });

  it("reads model upstream keys from the environment variable the file names", () => {
    const dir = dataDir({
      modelUpstreams: {
        codex: { kind: "openai", baseUrl: "https://api.openai.com/v1", apiKeyEnv: "OPENAI_KEY" },
      },
    });
    const config = resolveServerConfig(
      { dataDir: dir },
      { environment: { OPENAI_KEY: "sk-secret" } },
    );
    expect(config.modelUpstreams).toEqual({
      codex: {
        kind: "openai",
        baseUrl: "https://api.openai.com/v1",
        apiKey: "sk-secret",
        // Kept so the settings can name the variable where the key itself is never shown.
        apiKeyEnv: "OPENAI_KEY",
      },
    });
  });

  it("reads the models an upstream serves, for agents told their models (opencode)", () => {
    const dir = dataDir({
      modelUpstreams: {
        opencode: {
          kind: "openai",
          baseUrl: "https://api.openai.com/v1",
          apiKeyEnv: "OPENAI_KEY",
          models: ["gpt-5.1-codex", "gpt-5-mini"],
        },
        codex: { kind: "openai", baseUrl: "https://api.openai.com/v1", apiKeyEnv: "OPENAI_KEY" },
      },
    });
    const config = resolveServerConfig({ dataDir: dir }, { environment: { OPENAI_KEY: "sk" } });
    expect(config.upstreamModels).toEqual({ opencode: ["gpt-5.1-codex", "gpt-5-mini"] });
    const error = configError(() =>
      resolveServerConfig(
        {
          dataDir: dataDir({
            modelUpstreams: {
              opencode: {
                kind: "openai",
                baseUrl: "https://x.test/v1",
                apiKeyEnv: "K",
                models: [],
              },
            },
          }),
        },
        { environment: { K: "sk" } },
      ),
    );
    expect(error.message).toContain("modelUpstreams.opencode.models");
  });

  it("names the missing key variable of a model upstream", () => {
    const dir = dataDir({
      modelUpstreams: {
        claude: { kind: "anthropic", baseUrl: "https://api.anthropic.com", apiKeyEnv: "ANT_KEY" },
      },
    });
    const error = configError(() => resolveServerConfig({ dataDir: dir }, { environment: {} }));
    expect(error.message).toContain("modelUpstreams.claude.apiKeyEnv");
    expect(error.message).toContain("ANT_KEY");
  });

  it("refuses a key written into config.json instead of an environment variable name", () => {
    const dir = dataDir({
      modelUpstreams: {
        codex: { kind: "openai", baseUrl: "https://x.test/v1", apiKey: "sk-in-file" },
      },
    });
    const error = configError(() => resolveServerConfig({ dataDir: dir }, { environment: {} }));
    expect(error.message).toContain("config.json");
    expect(error.message).toContain("modelUpstreams.codex");
    expect(error.message).not.toContain("sk-in-file");
  });

  it("reads what agent processes inherit from agentEnvironment: deny entries and allowed names", () => {
    expect(
      resolveServerConfig({ dataDir: dataDir({}) }, { environment: {} }).agentEnvironment,
    ).toEqual({ deny: [], allow: [] });
    const dir = dataDir({
      agentEnvironment: { deny: ["GITHUB_TOKEN", "CORP_*"], allow: ["GEMINI_API_KEY"] },
    });
    expect(resolveServerConfig({ dataDir: dir }, { environment: {} }).agentEnvironment).toEqual({
      deny: ["GITHUB_TOKEN", "CORP_*"],
      allow: ["GEMINI_API_KEY"],
    });
  });

  it("reads codingAgent install sources per agent type: a file mirror, npm, an installed binary", () => {
    const codingAgent = {
      versions: { codex: "0.169.0", gemini: "0.61.0", "claude-code": "2.0.14" },
      install_source: { kind: "release", base_url: "https://mirror.internal/agents" },
      install_sources: {
        codex: { kind: "release", base_url: "file:///srv/mirror/codex" },
        gemini: { kind: "npm", registry: "http://127.0.0.1:4873" },
        "claude-code": { kind: "installed", path: "/opt/claude/bin/claude" },
        opencode: { kind: "installed" },
      },
    };
    const dir = dataDir({ codingAgent });
    expect(resolveServerConfig({ dataDir: dir }, { environment: {} }).codingAgent).toEqual(
      codingAgent,
    );
  });

  it("names the agent type and field of a bad codingAgent install source", () => {
    const wrongKind = dataDir({
      codingAgent: { install_sources: { gemini: { kind: "ftp", base_url: "ftp://x/" } } },
    });
    expect(
      configError(() => resolveServerConfig({ dataDir: wrongKind }, { environment: {} })).message,
    ).toContain("codingAgent.install_sources.gemini.kind");
    const relative = dataDir({
      codingAgent: { install_sources: { codex: { kind: "installed", path: "bin/codex" } } },
    });
    const error = configError(() =>
      resolveServerConfig({ dataDir: relative }, { environment: {} }),
    );
    expect(error.message).toContain(
      "codingAgent.install_sources.codex.path: must be an absolute path",
    );
    const badUrl = dataDir({
      codingAgent: { install_source: { kind: "release", base_url: "ftp://mirror/agents" } },
    });
    expect(
      configError(() => resolveServerConfig({ dataDir: badUrl }, { environment: {} })).message,
    ).toContain("codingAgent.install_source.base_url");
  });

  it("accepts batch codeHosts in config.json and names a bad entry", () => {
    const hosts = dataDir({ codeHosts: [{ type: "directory", path: "/srv/code" }] });
    expect(() => resolveServerConfig({ dataDir: hosts }, { environment: {} })).not.toThrow();
    const bad = dataDir({ codeHosts: [{ type: "svn", path: "/srv/code" }] });
    const error = configError(() => resolveServerConfig({ dataDir: bad }, { environment: {} }));
    expect(error.message).toContain("codeHosts");
  });

  it("reads codeHostConnections and withholds every connection's token variable from agents", () => {
    const dir = dataDir({
      agentEnvironment: { deny: ["CORP_*"] },
      codeHostConnections: [
        { type: "github", url: "https://github.com", tokenEnv: "GH_PUBLISH_TOKEN" },
        { type: "gitlab", url: "https://gitlab.example.com", tokenEnv: "GL_PUBLISH_TOKEN" },
      ],
      changesetTracking: { intervalSeconds: 60 },
    });
    const config = resolveServerConfig({ dataDir: dir }, { environment: {} });
    expect(config.codeHostConnections.map((connection) => connection.tokenEnv)).toEqual([
      "GH_PUBLISH_TOKEN",
      "GL_PUBLISH_TOKEN",
    ]);
    expect(config.agentEnvironment.deny).toEqual([
      "CORP_*",
      "GH_PUBLISH_TOKEN",
      "GL_PUBLISH_TOKEN",
    ]);
    expect(config.withheldEnv).toEqual(["GH_PUBLISH_TOKEN", "GL_PUBLISH_TOKEN"]);
    expect(config.changesetTrackingIntervalMs).toBe(60_000);
    const allowed = configError(() =>
      resolveServerConfig(
        {
          dataDir: dataDir({
            agentEnvironment: { allow: ["GH_PUBLISH_TOKEN"] },
            codeHostConnections: [
              { type: "github", url: "https://github.com", tokenEnv: "GH_PUBLISH_TOKEN" },
            ],
          }),
        },
        { environment: {} },
      ),
    );
    expect(allowed.message).toContain("agentEnvironment.allow");
    const bad = configError(() =>
      resolveServerConfig(
        { dataDir: dataDir({ codeHostConnections: [{ type: "svn", url: "https://x" }] }) },
        { environment: {} },
      ),
    );
    expect(bad.message).toContain("codeHostConnections");
  });

  it("names the entry for an agentEnvironment name that is no variable name", () => {
    const denied = configError(() =>
      resolveServerConfig(
        { dataDir: dataDir({ agentEnvironment: { deny: ["NOT A NAME"] } }) },
        { environment: {} },
      ),
    );
    expect(denied.message).toContain("agentEnvironment.deny.0");
    const allowed = configError(() =>
      resolveServerConfig(
        { dataDir: dataDir({ agentEnvironment: { allow: ["PATTERN_*"] } }) },
        { environment: {} },
      ),
    );
    expect(allowed.message).toContain("agentEnvironment.allow.0");
    expect(allowed.message).toContain("must be an environment variable name");
  });

  it("names the setting for a bad listen address, log level, database URL and broken JSON", () => {
    const dir = dataDir();
    expect(
      configError(() => resolveServerConfig({ dataDir: dir, listen: "nope" })).message,
    ).toContain("--listen");
    expect(
      configError(() =>
        resolveServerConfig({ dataDir: dir, logLevel: "loud" as never }, { environment: {} }),
      ).message,
    ).toContain("--log-level");
    const urlError = configError(() =>
      resolveServerConfig(
        { dataDir: dir },
        { environment: { [DATABASE_URL_ENV]: "mysql://u:pw@h/d" } },
      ),
    );
    expect(urlError.message).toContain(DATABASE_URL_ENV);
    expect(urlError.message).not.toContain("pw");
    writeFileSync(join(dir, "config.json"), "{not json");
    expect(configError(() => resolveServerConfig({ dataDir: dir })).message).toContain(
      "config.json",
    );
  });

  it("reads rollout windows, model budgets and prices, and names a window or budget that cannot work", () => {
    const none = resolveServerConfig({ dataDir: dataDir() }, { environment: {} });
    expect(none).toMatchObject({ rolloutWindows: null, modelBudgets: {}, modelPrices: undefined });
    const windows = [
      { rate: "unlimited" },
      { rate: "3/minute", days: ["monday"], start: "08:00", end: "16:00", timezone: "Asia/Tokyo" },
    ];
    const budgets = { run: { tokens: 2_000_000 }, day: { cost: 50 } };
    const prices = { currency: "USD", models: { "gpt-5*": { input: 1.25, output: 10 } } };
    expect(
      resolveServerConfig(
        {
          dataDir: dataDir({
            batchChanges: { rolloutWindows: windows },
            modelBudgets: budgets,
            modelPrices: prices,
          }),
        },
        { environment: {} },
      ),
    ).toMatchObject({ rolloutWindows: windows, modelBudgets: budgets, modelPrices: prices });
    const badWindow = configError(() =>
      resolveServerConfig(
        {
          dataDir: dataDir({
            batchChanges: { rolloutWindows: [{ rate: "5/day", start: "17:00", end: "09:00" }] },
          }),
        },
        { environment: {} },
      ),
    );
    expect(badWindow.message).toContain("batchChanges.rolloutWindows.0.rate");
    expect(badWindow.message).toContain(
      "batchChanges.rolloutWindows.0.end: end (09:00) must be after start (17:00)",
    );
    const unpriced = configError(() =>
      resolveServerConfig(
        { dataDir: dataDir({ modelBudgets: { day: { cost: 50 } } }) },
        { environment: {} },
      ),
    );
    expect(unpriced.message).toBe(
      "modelBudgets.day.cost in config.json needs modelPrices (each model's price per million tokens) to know what requests cost; add modelPrices, or give the budget in tokens",
    );
  });

  it("reads the model proxy's per-token rate limit from config.json: a bucket, false, or the default", () => {
    expect(resolveServerConfig({ dataDir: dataDir() }, { environment: {} })).toMatchObject({
      modelProxyRateLimit: null,
    });
    const bucket = { burst: 200, perSecond: 20 };
    expect(
      resolveServerConfig(
        { dataDir: dataDir({ modelProxyRateLimit: bucket }) },
        { environment: {} },
      ).modelProxyRateLimit,
    ).toEqual(bucket);
    expect(
      resolveServerConfig({ dataDir: dataDir({ modelProxyRateLimit: false }) }, { environment: {} })
        .modelProxyRateLimit,
    ).toBe(false);
    const error = configError(() =>
      resolveServerConfig(
        { dataDir: dataDir({ modelProxyRateLimit: { burst: 0, perSecond: 1 } }) },
        { environment: {} },
      ),
    );
    expect(error.message).toContain("modelProxyRateLimit");
  });

  it("reads how long agents may take to start, for everyone and per provider, in seconds", () => {
    expect(
      resolveServerConfig({ dataDir: dataDir() }, { environment: {} }).agentStartTimeouts,
    ).toEqual({ providers: {} });
    expect(
      resolveServerConfig(
        {
          dataDir: dataDir({
            agentStartTimeouts: {
              initializeSeconds: 120,
              providers: { opencode: { initializeSeconds: 180, sessionSeconds: 60 } },
            },
          }),
        },
        { environment: {} },
      ).agentStartTimeouts,
    ).toEqual({
      initializeMs: 120_000,
      providers: { opencode: { initializeMs: 180_000, sessionMs: 60_000 } },
    });
    const error = configError(() =>
      resolveServerConfig(
        {
          dataDir: dataDir({ agentStartTimeouts: { providers: { qwen: { sessionSeconds: 0 } } } }),
        },
        { environment: {} },
      ),
    );
    expect(error.message).toContain("agentStartTimeouts.providers.qwen.sessionSeconds");
  });

  it("reads the request body limit from config.json, 10 MiB by default", () => {
    expect(
      resolveServerConfig({ dataDir: dataDir() }, { environment: {} }).maxRequestBodyBytes,
    ).toBe(10 * 1024 * 1024);
    expect(
      resolveServerConfig(
        { dataDir: dataDir({ maxRequestBodyBytes: 50 * 1024 * 1024 }) },
        { environment: {} },
      ).maxRequestBodyBytes,
    ).toBe(50 * 1024 * 1024);
    const error = configError(() =>
      resolveServerConfig({ dataDir: dataDir({ maxRequestBodyBytes: 100 }) }, { environment: {} }),
    );
    expect(error.message).toContain("maxRequestBodyBytes");
  });

  it("requires auth on a non-loopback address, with or without a configured admin token", () => {
    const dir = dataDir();
    expect(
      resolveServerConfig({ dataDir: dir, listen: "0.0.0.0:7420" }, { environment: {} }),
    ).toMatchObject({ host: "0.0.0.0", adminToken: null, requireAuth: true });
    expect(resolveServerConfig({ dataDir: dir }, { environment: {} })).toMatchObject({
      requireAuth: false,
    });
    const config = resolveServerConfig(
      { dataDir: dir, listen: "0.0.0.0:7420" },
      { environment: { [ADMIN_TOKEN_ENV]: "a".repeat(32) } },
    );
    expect(config).toMatchObject({
      host: "0.0.0.0",
      adminToken: "a".repeat(32),
      requireAuth: true,
    });
  });

  it("refuses a short admin token without echoing it", () => {
    const error = configError(() =>
      resolveServerConfig({ dataDir: dataDir() }, { environment: { [ADMIN_TOKEN_ENV]: "tiny42" } }),
    );
    expect(error.message).toContain(ADMIN_TOKEN_ENV);
    expect(error.message).not.toContain("tiny42");
  });

  it("reads the public URL from --public-url, then the environment, then config.json", () => {
    const dir = dataDir({ publicUrl: "https://file.example.com" });
    expect(resolveServerConfig({ dataDir: dataDir() }, { environment: {} })).toMatchObject({
      publicUrl: null,
      allowedHosts: [],
      allowedOrigins: [],
    });
    expect(resolveServerConfig({ dataDir: dir }, { environment: {} }).publicUrl).toBe(
      "https://file.example.com",
    );
    const environment = { [PUBLIC_URL_ENV]: "https://env.example.com:8443/" };
    expect(resolveServerConfig({ dataDir: dir }, { environment }).publicUrl).toBe(
      "https://env.example.com:8443",
    );
    const { help: _help, ...flags } = parseServerArguments([
      "--public-url",
      "http://flag.example.com",
      "--data-dir",
      dir,
    ]);
    expect(resolveServerConfig(flags, { environment }).publicUrl).toBe("http://flag.example.com");
  });

  it("refuses a public URL with a path, another scheme or credentials, naming where it came from", () => {
    for (const value of [
      "https://x.example.com/deckhand",
      "ftp://x.example.com",
      "https://u:p@x",
      "x.example.com",
    ]) {
      const error = configError(() =>
        resolveServerConfig({ dataDir: dataDir(), publicUrl: value }, { environment: {} }),
      );
      expect(error.message).toContain(`--public-url "${value}" is not the http(s) URL people open`);
    }
    const fromFile = configError(() =>
      resolveServerConfig({ dataDir: dataDir({ publicUrl: "https://x/y" }) }, { environment: {} }),
    );
    expect(fromFile.message).toContain("publicUrl in config.json");
  });

  it("reads allowed hosts and origins from the environment (comma-separated) over config.json", () => {
    const dir = dataDir({
      allowedHosts: ["deckhand.lan", ".corp.example"],
      allowedOrigins: ["https://tools.example.com"],
    });
    expect(resolveServerConfig({ dataDir: dir }, { environment: {} })).toMatchObject({
      allowedHosts: ["deckhand.lan", ".corp.example"],
      allowedOrigins: ["https://tools.example.com"],
    });
    const environment = {
      [ALLOWED_HOSTS_ENV]: " a.example , b.example,",
      [ALLOWED_ORIGINS_ENV]: "http://localhost:5173",
    };
    expect(resolveServerConfig({ dataDir: dir }, { environment })).toMatchObject({
      allowedHosts: ["a.example", "b.example"],
      allowedOrigins: ["http://localhost:5173"],
    });
  });

  it("names a bad allowed host or origin, in config.json or the environment", () => {
    const hostError = configError(() =>
      resolveServerConfig(
        { dataDir: dataDir({ allowedHosts: ["ok.example", "x.example:443"] }) },
        { environment: {} },
      ),
    );
    expect(hostError.message).toContain(
      "allowedHosts.1: must be a host name or address without a port",
    );
    const originError = configError(() =>
      resolveServerConfig(
        { dataDir: dataDir({ allowedOrigins: ["https://x/path"] }) },
        { environment: {} },
      ),
    );
    expect(originError.message).toContain(
      "allowedOrigins.0: must be an http(s) origin without a path",
    );
    const envError = configError(() =>
      resolveServerConfig(
        { dataDir: dataDir() },
        { environment: { [ALLOWED_ORIGINS_ENV]: "null" } },
      ),
    );
    expect(envError.message).toContain(
      `${ALLOWED_ORIGINS_ENV} entry "null" must be an http(s) origin`,
    );
  });

  it("builds the origin policy from the configuration, naming its settings in refusals", () => {
    const request = { method: "GET", origin: undefined, fetchSite: undefined };
    const loopback = serverOriginPolicy(
      resolveServerConfig({ dataDir: dataDir() }, { environment: {} }),
    );
    expect(loopback.refusal({ ...request, host: "127.0.0.1:7420" })).toBeNull();
    expect(loopback.refusal({ ...request, host: "attacker.example:7420" })?.message).toBe(
      `Host "attacker.example:7420" is not one of this server's names; if you reach the server by that name, add it to allowedHosts in config.json (or ${ALLOWED_HOSTS_ENV}), or set publicUrl (--public-url) to the URL people open`,
    );
    const named = serverOriginPolicy(
      resolveServerConfig(
        { dataDir: dataDir({ allowedHosts: [".corp.example"] }), listen: "deckhand.lan:7420" },
        { environment: { [ADMIN_TOKEN_ENV]: "a".repeat(32) } },
      ),
    );
    for (const host of ["deckhand.lan:7420", "build.corp.example", "192.168.1.20:7420"]) {
      expect(named.refusal({ ...request, host }), host).toBeNull();
    }
    expect(named.refusal({ ...request, host: "attacker.example" })?.code).toBe("host_not_allowed");
  });
});
