import { writeFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { cleanUp, temporaryDirectory } from "../test/support.ts";
import { interpretProvidersConfig, readProvidersConfig } from "./config-file.ts";
import { BUILTIN_PROVIDERS } from "./registry.ts";

afterAll(cleanUp);

const FILE = "/data/providers.json";
const builtinIds = BUILTIN_PROVIDERS.map((provider) => provider.id);
/** Built-ins whose command may be overridden: every one but the native agent. */
const commandIds = BUILTIN_PROVIDERS.filter((provider) => provider.transport === "acp").map(
  (provider) => provider.id,
);

const command = fc.array(fc.string({ minLength: 1, maxLength: 10 }), {
  minLength: 1,
  maxLength: 4,
});
const env = fc.dictionary(fc.string({ minLength: 1, maxLength: 8 }), fc.string({ maxLength: 8 }));

/** Valid overrides of a built-in, each with what the registry must then say. */
const validOverride = fc.record(
  {
    enabled: fc.boolean(),
    label: fc.string({ minLength: 1, maxLength: 12 }),
    env,
    command,
  },
  { requiredKeys: [] },
);

/** A valid custom provider: `extends: "acp"` and a command, the rest optional. */
const validCustom = fc.record(
  {
    extends: fc.constant("acp" as const),
    command,
    enabled: fc.boolean(),
    label: fc.string({ minLength: 1, maxLength: 12 }),
    env,
  },
  { requiredKeys: ["extends", "command"] },
);

/** Provider ids as the file accepts them (see ProviderIdSchema), never a built-in's. */
const customId = fc
  .stringMatching(/^[a-z0-9][a-z0-9._-]{0,11}$/)
  .filter((id) => !builtinIds.includes(id));

/** Anything at all: arbitrary JSON where a provider's settings would go. */
const junk = fc.jsonValue({ maxDepth: 3 });
/** Settings no entry has, so junk under them cannot change a valid entry. */
const unknownSetting = fc.constantFrom("bogus", "enable", "$comment", "commands", "Label");

describe("the providers config file, as arbitrary JSON", () => {
  it("never throws and always yields every built-in", () => {
    fc.assert(
      fc.property(fc.oneof(fc.json({ maxDepth: 4 }), fc.string()), (text) => {
        const config = interpretProvidersConfig(FILE, text);
        const ids = config.providers.map((provider) => provider.id);
        expect(ids.slice(0, builtinIds.length)).toEqual(builtinIds);
        for (const diagnostic of config.diagnostics) expect(diagnostic.file).toBe(FILE);
      }),
      { numRuns: 400 },
    );
  });

  it("applies every valid override and custom provider whatever junk surrounds them", () => {
    fc.assert(
      fc.property(
        fc.dictionary(fc.constantFrom(...commandIds), validOverride),
        fc.dictionary(customId, validCustom, { maxKeys: 4 }),
        fc.dictionary(fc.string({ maxLength: 10 }), junk),
        fc.dictionary(fc.string({ maxLength: 10 }), junk),
        fc.dictionary(unknownSetting, junk),
        (overrides, customs, junkProviders, junkTop, junkFields) => {
          const providers: Record<string, unknown> = { ...junkProviders };
          for (const [id, override] of Object.entries(overrides)) {
            // Junk in other fields of the same entry must not cost the valid ones.
            providers[id] = { ...junkFields, ...override };
          }
          for (const [id, custom] of Object.entries(customs)) {
            providers[id] = { ...junkFields, ...custom };
          }
          const text = JSON.stringify({ ...junkTop, providers });
          const config = interpretProvidersConfig(FILE, text);
          const ids = config.providers.map((provider) => provider.id);
          expect(ids.slice(0, builtinIds.length)).toEqual(builtinIds);
          for (const [id, override] of Object.entries(overrides)) {
            const provider = config.providers.find((candidate) => candidate.id === id)!;
            if (override.enabled !== undefined) expect(provider.enabled).toBe(override.enabled);
            if (override.label !== undefined) expect(provider.label).toBe(override.label);
            if (override.env !== undefined) expect(provider.env).toMatchObject(override.env);
            if (override.command !== undefined) expect(provider.command).toEqual(override.command);
          }
          // Custom providers follow the built-ins, in the file's order (as JSON.parse keeps it).
          const isCustom = (id: string) => Object.hasOwn(customs, id);
          const fileOrder = Object.keys(JSON.parse(text).providers).filter(isCustom);
          expect(ids.filter(isCustom)).toEqual(fileOrder);
          for (const [id, custom] of Object.entries(customs)) {
            const provider = config.providers.find((candidate) => candidate.id === id)!;
            expect(provider).toMatchObject({
              transport: "acp",
              builtin: false,
              command: custom.command,
              label: custom.label ?? id,
              enabled: custom.enabled ?? true,
              env: custom.env ?? {},
              modelProxy: null,
            });
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe("the providers config file, as bytes on disk", () => {
  const directory = temporaryDirectory();
  let count = 0;
  const fileWith = (bytes: Uint8Array | string) => {
    count += 1;
    const path = join(directory, `providers-${count}.json`);
    writeFileSync(path, bytes);
    return path;
  };

  it("never throws on arbitrary bytes and always yields every built-in", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(fc.uint8Array({ maxLength: 200 }), fc.json({ maxDepth: 3 })),
        async (bytes) => {
          const path = fileWith(bytes);
          const config = await readProvidersConfig(path);
          const ids = config.providers.map((provider) => provider.id);
          expect(ids.slice(0, builtinIds.length)).toEqual(builtinIds);
          for (const diagnostic of config.diagnostics) expect(diagnostic.file).toBe(path);
        },
      ),
      { numRuns: 150 },
    );
  });

  it("reads a file saved with a UTF-8 byte order mark as if it had none", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.json({ maxDepth: 3 }),
          fc
            .dictionary(customId, validCustom, { maxKeys: 3 })
            .map((providers) => JSON.stringify({ providers })),
        ),
        async (text) => {
          const plain = await readProvidersConfig(fileWith(text));
          const marked = await readProvidersConfig(fileWith(`\uFEFF${text}`));
          expect(marked.providers).toEqual(plain.providers);
          expect(marked.patchable).toBe(plain.patchable);
          expect(marked.diagnostics.map(({ field, message }) => ({ field, message }))).toEqual(
            plain.diagnostics.map(({ field, message }) => ({ field, message })),
          );
          expect(marked.etag).not.toBe(plain.etag);
        },
      ),
      { numRuns: 100 },
    );
    const marked = await readProvidersConfig(
      fileWith(
        Buffer.concat([
          Buffer.from([0xef, 0xbb, 0xbf]),
          Buffer.from('{"providers": {"codex": {"enabled": false}}}'),
        ]),
      ),
    );
    expect(marked.diagnostics).toEqual([]);
    expect(marked.providers.find((provider) => provider.id === "codex")!.enabled).toBe(false);
  });
});
