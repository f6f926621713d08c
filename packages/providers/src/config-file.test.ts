import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { cleanUp, temporaryDirectory } from "../test/support.ts";
import {
  configEtag,
  interpretProvidersConfig,
  readProvidersConfig,
  writeFileAtomically,
} from "./config-file.ts";
import { BUILTIN_PROVIDERS } from "./registry.ts";

const FILE = "/data/providers.json";
const builtinIds = BUILTIN_PROVIDERS.map((provider) => provider.id);

afterEach(cleanUp);

describe("interpretProvidersConfig", () => {
  it("gives the built-ins, all enabled, when the file does not exist", () => {
    const config = interpretProvidersConfig(FILE, null);
    expect(config.providers.map((provider) => provider.id)).toEqual(builtinIds);
    expect(config.providers.every((provider) => provider.enabled)).toBe(true);
    expect(config.diagnostics).toEqual([]);
    expect(config.patchable).toBe(true);
  });

  it("falls back to the built-ins with a diagnostic for invalid JSON", () => {
    const config = interpretProvidersConfig(FILE, '{"providers": {');
    expect(config.providers.map((provider) => provider.id)).toEqual(builtinIds);
    expect(config.patchable).toBe(false);
    expect(config.diagnostics).toEqual([
      {
        file: FILE,
        field: "",
        message: expect.stringMatching(/^not valid JSON \(.+\); Deckhand uses the built-in/),
      },
    ]);
  });

  it("names the field and why for every bad setting, and keeps the good ones", () => {
    const config = interpretProvidersConfig(
      FILE,
      JSON.stringify({
        providers: {
          codex: { enabled: "no", label: "My Codex", env: { TOKEN: 3 } },
          claude: { enabled: false, enable: true },
          mine: { label: "forgot extends", command: ["x"] },
          "Bad Id": { extends: "acp", command: ["x"] },
          custom: { extends: "acp", command: [] },
          gemini: "off",
        },
      }),
    );
    const codex = config.providers.find((provider) => provider.id === "codex")!;
    expect(codex).toMatchObject({ label: "My Codex", enabled: true, env: {} });
    expect(config.providers.find((provider) => provider.id === "claude")!.enabled).toBe(false);
    expect(config.providers.map((provider) => provider.id)).toEqual(builtinIds);
    expect(config.diagnostics.map((diagnostic) => diagnostic.field)).toEqual([
      "providers.codex.enabled",
      "providers.codex.env.TOKEN",
      "providers.claude.enable",
      "providers.mine",
      'providers["Bad Id"]',
      "providers.custom.command",
      "providers.gemini",
    ]);
    expect(config.diagnostics[0]!.message).toContain("expected boolean");
    expect(config.diagnostics[3]!.message).toContain('set "extends": "acp"');
    expect(config.diagnostics.every((diagnostic) => diagnostic.file === FILE)).toBe(true);
  });

  it("adds custom ACP providers after the built-ins, enabled unless they say otherwise", () => {
    const config = interpretProvidersConfig(
      FILE,
      JSON.stringify({
        providers: {
          "my-agent": { extends: "acp", command: ["my-agent", "--acp"], env: { A: "1" } },
          other: {
            extends: "acp",
            label: "Other",
            command: ["other"],
            enabled: false,
            versionArgs: ["version", "--short"],
          },
        },
      }),
    );
    expect(config.diagnostics).toEqual([]);
    expect(config.providers.slice(builtinIds.length)).toEqual([
      {
        id: "my-agent",
        label: "my-agent",
        transport: "acp",
        builtin: false,
        command: ["my-agent", "--acp"],
        env: { A: "1" },
        installHint: null,
        // No version command is tried on an agent that did not name one.
        versionArgs: null,
        modelProxy: null,
        stateDirectories: [],
        loginFiles: [],
        serveFileReads: true,
        enabled: true,
      },
      expect.objectContaining({
        id: "other",
        label: "Other",
        enabled: false,
        versionArgs: ["version", "--short"],
      }),
    ]);
  });

  it("takes an agent's state directories for its sandbox, refusing paths that leave the home", () => {
    const config = interpretProvidersConfig(
      "/data/providers.json",
      JSON.stringify({
        providers: {
          codex: { stateDirectories: [".codex", ".cache/codex"] },
          mine: { extends: "acp", command: ["mine"], stateDirectories: ["../elsewhere"] },
        },
      }),
    );
    const codex = config.providers.find((provider) => provider.id === "codex");
    expect(codex?.stateDirectories).toEqual([".codex", ".cache/codex"]);
    expect(codex?.loginFiles).toEqual([".codex/auth.json"]);
    expect(config.providers.find((provider) => provider.id === "mine")?.stateDirectories).toEqual(
      [],
    );
    expect(config.diagnostics).toEqual([
      expect.objectContaining({
        field: "providers.mine.stateDirectories[0]",
        message: expect.stringMatching(/must be a path inside the home directory .* without \.\./),
      }),
    ]);
  });

  it("lets a built-in's command and env be overridden, but not the native agent's command", () => {
    const config = interpretProvidersConfig(
      FILE,
      JSON.stringify({
        providers: {
          gemini: { command: ["/opt/gemini/bin/gemini", "--acp"], env: { DEBUG: "1" } },
          deckhand: { command: ["nope"] },
        },
      }),
    );
    expect(config.providers.find((provider) => provider.id === "gemini")).toMatchObject({
      command: ["/opt/gemini/bin/gemini", "--acp"],
      env: { DEBUG: "1" },
    });
    expect(config.providers.find((provider) => provider.id === "deckhand")!.command).toBeNull();
    expect(config.diagnostics.map((diagnostic) => diagnostic.field)).toEqual([
      "providers.deckhand.command",
    ]);
  });

  it("reports a file that is not an object, and a providers section that is not one", () => {
    expect(interpretProvidersConfig(FILE, "[1, 2]").diagnostics[0]!.message).toContain(
      "must be a JSON object",
    );
    expect(interpretProvidersConfig(FILE, '{"providers": []}').diagnostics).toEqual([
      expect.objectContaining({ field: "providers" }),
    ]);
  });
});

describe("readProvidersConfig and writeFileAtomically", () => {
  it("hashes the bytes into the ETag and keeps fields it does not know", async () => {
    const directory = temporaryDirectory();
    const path = join(directory, "nested", "providers.json");
    const missing = await readProvidersConfig(path);
    expect(missing.etag).toBe(configEtag(""));
    const text = `${JSON.stringify({ $schema: "x", providers: { codex: { enabled: false, note: "mine" } } })}\n`;
    await writeFileAtomically(path, text);
    expect(readFileSync(path, "utf8")).toBe(text);
    const read = await readProvidersConfig(path);
    expect(read.etag).toBe(configEtag(text));
    expect(read.etag).not.toBe(missing.etag);
    expect(read.document).toEqual({
      $schema: "x",
      providers: { codex: { enabled: false, note: "mine" } },
    });
  });

  it("reports an unreadable file instead of failing", async () => {
    const directory = temporaryDirectory();
    const read = await readProvidersConfig(directory);
    expect(read.patchable).toBe(false);
    expect(read.providers.map((provider) => provider.id)).toEqual(builtinIds);
    expect(read.diagnostics[0]!.message).toContain("cannot be read (EISDIR)");
  });
});
