import { spawnSync } from "node:child_process";
import { REDACTED } from "@deckhand/secrets";
import { WireEnv, WireHeader } from "@deckhand/wire";
import { describe, expect, it } from "vitest";
import { codexArguments } from "./agents/codex.ts";
import { ALL_PLATFORMS } from "./platform.ts";
import { defaultAgentRegistry } from "./registry.ts";
import { type RenderCodingAgentStepInput, renderCodingAgentStep } from "./render.ts";
import type { InstallSource } from "./types.ts";

const providerUrl = "https://deckhand.example.com/proxy";

function input(overrides: Partial<RenderCodingAgentStepInput> = {}): RenderCodingAgentStepInput {
  return {
    type: "codex",
    prompt: "Rename foo to bar",
    version: "0.169.0",
    model: "gpt-5.1-codex",
    platform: { os: "linux", arch: "x64" },
    installSource: {
      kind: "release",
      baseUrl: "https://github.com/openai/codex/releases/download",
    },
    modelProviderUrl: providerUrl,
    image: "ubuntu:24.04",
    ...overrides,
  };
}

function render(overrides: Partial<RenderCodingAgentStepInput> = {}) {
  const result = renderCodingAgentStep(input(overrides));
  if (!result.ok) throw result.error;
  return result.value;
}

function renderError(overrides: Partial<RenderCodingAgentStepInput>) {
  const result = renderCodingAgentStep(input(overrides));
  if (result.ok) throw new Error("expected a render error");
  return result.error;
}

describe("codex run command", () => {
  it("is exactly the invocation checked against codex 0.169", () => {
    const args = codexArguments({
      prompt: "-starts with a dash",
      model: "gpt-5.1-codex",
      version: "0.169.0",
      baseUrl: `${providerUrl}/codex`,
    });
    expect(args).toEqual([
      "exec",
      "--json",
      "--skip-git-repo-check",
      "--ephemeral",
      "--dangerously-bypass-approvals-and-sandbox",
      "-c",
      "analytics.enabled=false",
      "--disable",
      "plugins",
      "-c",
      'model_provider="deckhand"',
      "-c",
      'model_providers.deckhand.name="Deckhand model provider"',
      "-c",
      `model_providers.deckhand.base_url="${providerUrl}/codex"`,
      "-c",
      `model_providers.deckhand.env_key="${WireEnv.modelProviderToken}"`,
      "-c",
      `model_providers.deckhand.env_http_headers={"${WireHeader.jobId}"="${WireEnv.jobId}"}`,
      "-c",
      'model="gpt-5.1-codex"',
      "--",
      "-starts with a dash",
    ]);
  });

  it("escapes TOML strings so a model or URL cannot add config", () => {
    const [model] = codexArguments({
      prompt: "p",
      model: 'm" \\ x',
      version: "1",
      baseUrl: "http://h/codex",
    }).filter((argument) => argument.startsWith("model="));
    expect(model).toBe('model="m\\" \\\\ x"');
  });

  it("renders the command with stdin closed and the prompt as one quoted word", () => {
    const { script } = render({ prompt: "it's $(rm -rf /) `x`" });
    expect(script).toContain(`-- 'it'\\''s $(rm -rf /) \`x\`' \\\n  </dev/null\n`);
    expect(script).toContain('exec "$deckhand_agent" \\\n  exec \\\n  --json \\\n');
  });
});

describe("renderCodingAgentStep", () => {
  it("takes version, model, platform and download base URL from each render", () => {
    const first = render().script;
    const second = render({
      version: "0.170.1",
      model: "gpt-5.2-codex",
      platform: { os: "linux", arch: "aarch64" },
      installSource: { kind: "release", baseUrl: "http://mirror.internal/codex/" },
    }).script;
    expect(first).toContain(
      "https://github.com/openai/codex/releases/download/rust-v0.169.0/codex-x86_64-unknown-linux-musl.tar.gz",
    );
    expect(second).toContain(
      "http://mirror.internal/codex/rust-v0.170.1/codex-aarch64-unknown-linux-musl.tar.gz",
    );
    expect(second).toContain("deckhand_expected_version='codex-cli 0.170.1'");
    expect(second).toContain(`-c 'model="gpt-5.2-codex"'`);
    expect(second).toContain('deckhand_install_dir="$HOME"/.deckhand/agents/codex/0.170.1');
  });

  it("accepts Docker's and the kernel's architecture names", () => {
    expect(render({ platform: { os: "linux", arch: "amd64" } }).script).toContain(
      "x86_64-unknown-linux-musl",
    );
    expect(render({ platform: { os: "darwin", arch: "arm64" } }).script).toContain(
      "aarch64-apple-darwin",
    );
  });

  it("rejects an unsupported platform naming the supported ones", () => {
    const error = renderError({ platform: { os: "windows", arch: "x64" } });
    expect(error.code).toBe("unsupported_platform");
    expect(error.message).toBe(
      "codex cannot be installed on windows/x64; supported platforms: linux/x64, linux/arm64, darwin/x64, darwin/arm64",
    );
    expect(renderError({ platform: { os: "linux", arch: "riscv64" } }).message).toMatch(
      /^codex cannot be installed on linux\/riscv64; supported platforms: /,
    );
  });

  it("rejects an unknown agent type listing the known ones", () => {
    const error = renderError({ type: "aider" });
    expect(error.code).toBe("unknown_agent_type");
    expect(error.message).toBe(
      'unknown codingAgent type "aider"; known types: codex, claude-code, opencode, gemini',
    );
  });

  it("rejects inputs that cannot be rendered safely", () => {
    expect(renderError({ prompt: "a\u0000b" }).message).toBe(
      "the prompt contains a NUL character, which no command-line argument can carry; remove it",
    );
    expect(renderError({ prompt: "  \n" }).message).toBe(
      "the codex prompt is empty; say what the agent should do",
    );
    expect(renderError({ version: "1.0; rm -rf /" }).message).toBe(
      'codex version "1.0; rm -rf /" is not a version; give one like 0.169.0 (letters, digits, . + _ -)',
    );
    expect(renderError({ model: "" }).code).toBe("invalid_render_input");
    expect(renderError({ modelProviderUrl: "ftp://x" }).message).toBe(
      'model-provider URL "ftp://x" is not an http:// or https:// URL',
    );
    expect(renderError({ modelProviderUrl: "https://user:pw@x" }).message).toBe(
      "model-provider URL must not contain credentials; the script carrying it is shown in logs",
    );
    expect(renderError({ installSource: { kind: "release", baseUrl: "nope" } }).message).toBe(
      'release base URL "nope" is not a URL; give an http://, https:// or file:// URL',
    );
    expect(
      renderError({ installSource: { kind: "release", baseUrl: "file://host/x" } }).message,
    ).toBe(
      'release base URL "file://host/x" names a host; a file:// URL is a local path, file:///…',
    );
    expect(renderError({ installSource: { kind: "npm", registry: "file:///x" } }).message).toBe(
      'npm registry "file:///x" is not an http:// or https:// URL',
    );
    expect(renderError({ installSource: { kind: "installed", path: "bin/codex" } }).message).toBe(
      'installed agent path "bin/codex" must be an absolute path without control characters',
    );
    expect(renderError({ stateDirectory: "state" }).message).toBe(
      'state directory "state" must be absolute or start with $HOME/',
    );
    expect(renderError({ installDirectory: "relative/dir" }).message).toBe(
      'install directory "relative/dir" must be absolute or start with $HOME/',
    );
    expect(renderError({ installDirectory: "/opt/../etc" }).message).toBe(
      'install directory "/opt/../etc" must not contain ".." or control characters',
    );
  });

  it("keeps per-job credentials out of the step's env: the runner forwards them", () => {
    const error = renderError({ env: { [WireEnv.modelProviderToken]: "pinned" } });
    expect(error.message).toBe(
      `env ${WireEnv.modelProviderToken} is set by Deckhand for every codingAgent step; remove it from the step's env`,
    );
    const rendered = render({ env: { GREETING: "hi" } });
    expect(rendered.env).toEqual({ GREETING: "hi", [WireEnv.modelProviderUrl]: providerUrl });
    expect(rendered.forwardedEnv).toEqual([WireEnv.modelProviderToken, WireEnv.jobId]);
  });

  it("redacts secret env values in the displayed script", () => {
    const rendered = render({
      prompt: "use the key s3cr3t-value here",
      env: { API_KEY: "s3cr3t-value" },
      secretEnvNames: ["API_KEY"],
    });
    expect(rendered.script).toContain("s3cr3t-value");
    expect(rendered.redactedScript).not.toContain("s3cr3t-value");
    expect(rendered.redactedScript).toContain(`use the key ${REDACTED} here`);
  });

  it("installs into the caller's directory, absolute or under $HOME", () => {
    expect(render({ installDirectory: "/opt/deckhand/codex/" }).script).toContain(
      "deckhand_install_dir=/opt/deckhand/codex\n",
    );
    expect(render({ installDirectory: "$HOME/agents/my dir" }).script).toContain(
      `deckhand_install_dir="$HOME"'/agents/my dir'\n`,
    );
  });

  it("points claude-code at <url>/claude-code with the token and job id header from the environment", () => {
    const { script } = render({
      type: "claude-code",
      version: "2.0.14",
      model: "claude-sonnet-4-5",
      installSource: { kind: "npm" },
    });
    expect(script).toContain(`export ANTHROPIC_BASE_URL=${providerUrl}/claude-code\n`);
    expect(script).toContain(`export ANTHROPIC_AUTH_TOKEN="\${${WireEnv.modelProviderToken}}"\n`);
    expect(script).toContain(
      `export ANTHROPIC_CUSTOM_HEADERS='${WireHeader.jobId}: '"\${${WireEnv.jobId}}"\n`,
    );
    expect(script).toContain("unset ANTHROPIC_API_KEY\n");
    expect(script).toContain("deckhand_expected_version='2.0.14 (Claude Code)'");
    expect(script).toContain("npm install --prefix");
    expect(script).toContain("@anthropic-ai/claude-code@2.0.14");
  });

  it("runs opencode and gemini non-interactively against <url>/<type> with run-time credentials", () => {
    const opencode = render({ type: "opencode", version: "1.0.10", model: "gpt-5.1" }).script;
    const config = JSON.parse(
      /export OPENCODE_CONFIG_CONTENT='([^']*)'/.exec(opencode)?.[1] ?? "null",
    ) as { provider: Record<string, { options: Record<string, unknown> }> };
    expect(config.provider.deckhand?.options).toEqual({
      baseURL: `${providerUrl}/opencode`,
      apiKey: `{env:${WireEnv.modelProviderToken}}`,
      headers: { [WireHeader.jobId]: `{env:${WireEnv.jobId}}` },
    });
    expect(opencode).toContain(
      "  run \\\n  --model=deckhand/gpt-5.1 \\\n  --format=json \\\n  -- 'Rename foo to bar' \\\n",
    );
    expect(opencode).toContain("/v1.0.10/opencode-linux-x64.tar.gz");

    // Its own XDG directories in the step's state directory, and no outside lookups.
    for (const [name, directory] of [
      ["XDG_DATA_HOME", "data"],
      ["XDG_STATE_HOME", "state"],
      ["XDG_CONFIG_HOME", "config"],
      ["XDG_CACHE_HOME", "cache"],
    ]) {
      expect(opencode).toContain(`export ${name}="\${deckhand_state}"/${directory}\n`);
    }
    for (const name of [
      "OPENCODE_DISABLE_MODELS_FETCH",
      "OPENCODE_DISABLE_DEFAULT_PLUGINS",
      "OPENCODE_DISABLE_AUTOUPDATE",
      "OPENCODE_DISABLE_SHARE",
      "OPENCODE_DISABLE_LSP_DOWNLOAD",
    ]) {
      expect(opencode).toContain(`export ${name}=1\n`);
    }
    expect(opencode).toContain(
      // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion
      'deckhand_state=$(mktemp -d "${TMPDIR:-/tmp}/deckhand-agent-state.XXXXXX")\n',
    );
  });

  it("installs gemini's whole code-split bundle and runs it headless with API-key auth, trust and no usage statistics", () => {
    const release = render({ type: "gemini", version: "0.61.0", model: "gemini-2.5-pro" }).script;
    expect(release).toContain("/v0.61.0/gemini-cli-bundle.zip");
    expect(release).toContain('unzip -q "$deckhand_stage/download" -d "$deckhand_stage/package"');
    expect(release).toContain('ln -s "../$deckhand_tree/package/gemini.js"');
    expect(release).not.toMatch(/\/gemini\.js'? \|\|/);
    const npm = render({
      type: "gemini",
      version: "0.61.0",
      model: "gemini-2.5-pro",
      installSource: { kind: "npm" },
    }).script;
    expect(npm).toContain("npm install --prefix");
    expect(npm).toContain(" @google/gemini-cli@0.61.0 ");

    const gemini = render({
      type: "gemini",
      version: "0.61.0",
      model: "gemini-2.5-pro",
      stateDirectory: "/work/steps/7/agent-state",
    }).script;
    expect(gemini).toContain("deckhand_state=/work/steps/7/agent-state\n");
    // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion
    expect(gemini).toContain('export GEMINI_CLI_HOME="${deckhand_state}"\n');
    const settings = /printf '%s\\n' '([^']*)' >"\$deckhand_state\/\.gemini\/settings\.json"/.exec(
      gemini,
    );
    expect(JSON.parse(settings?.[1] ?? "null")).toEqual({
      security: { auth: { selectedType: "gemini-api-key" } },
      privacy: { usageStatisticsEnabled: false },
      general: { enableAutoUpdate: false, enableAutoUpdateNotification: false },
    });
    expect(gemini).toContain(`export GOOGLE_GEMINI_BASE_URL=${providerUrl}/gemini\n`);
    expect(gemini).toContain(`export GEMINI_API_KEY="\${${WireEnv.modelProviderToken}}"\n`);
    expect(gemini).toContain(
      `export GEMINI_CLI_CUSTOM_HEADERS='${WireHeader.jobId}: '"\${${WireEnv.jobId}}"\n`,
    );
    // The token goes out once, as the API key; never in a header variable of its own.
    expect(gemini).not.toMatch(new RegExp(`CUSTOM_HEADERS=.*${WireEnv.modelProviderToken}`));
    expect(gemini).toContain("unset GOOGLE_GENAI_USE_VERTEXAI\n");
    expect(gemini).toContain(
      "  --skip-trust \\\n  --model=gemini-2.5-pro \\\n  --yolo \\\n  --output-format=stream-json \\\n  '--prompt=Rename foo to bar' \\\n  </dev/null\n",
    );
  });

  it("uses an agent already installed, by path or on PATH, without a download or install lock", () => {
    const byPath = render({ installSource: { kind: "installed", path: "/opt/codex/bin/codex" } });
    expect(byPath.script).toContain("deckhand_agent=/opt/codex/bin/codex\n");
    expect(byPath.script).not.toContain("curl");
    expect(byPath.script).not.toContain("deckhand_lock_install");
    expect(byPath.agentPath).toBe("/opt/codex/bin/codex");
    const onPath = render({ installSource: { kind: "installed" } }).script;
    expect(onPath).toContain("if ! deckhand_agent=$(command -v codex); then\n");
    expect(onPath).toContain('deckhand_check_version "$deckhand_agent"\n');
  });

  it("sh -n accepts every rendered script for every agent type, platform and install source", () => {
    const sources: InstallSource[] = [
      { kind: "release", baseUrl: "https://downloads.example.com/releases" },
      { kind: "release", baseUrl: "file:///srv/mirror/agents" },
      { kind: "npm" },
      { kind: "npm", registry: "http://127.0.0.1:4873" },
      { kind: "installed" },
      { kind: "installed", path: "/opt/agents/bin/agent" },
    ];
    const prompt = "multi\nline 'quoted' \"double\" $(x) `y` # not a comment \\ ! * é";
    let checked = 0;
    for (const type of defaultAgentRegistry.types()) {
      for (const platformName of ALL_PLATFORMS) {
        const [os, arch] = platformName.split("/") as [string, string];
        for (const libc of ["glibc", "musl"] as const) {
          for (const installSource of sources) {
            const result = renderCodingAgentStep(
              input({ type, prompt, platform: { os, arch, libc }, installSource }),
            );
            if (!result.ok) throw result.error;
            const check = spawnSync("/bin/sh", ["-n"], { input: result.value.script });
            expect(
              check.stderr.toString(),
              `${type} ${platformName} ${libc} ${installSource.kind}`,
            ).toBe("");
            expect(check.status).toBe(0);
            checked++;
          }
        }
      }
    }
    expect(checked).toBe(4 * 4 * 2 * 6);
  });
});
