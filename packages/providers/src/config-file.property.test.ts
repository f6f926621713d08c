import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { interpretProvidersConfig } from "./config-file.ts";
import { BUILTIN_PROVIDERS } from "./registry.ts";

const FILE = "/data/providers.json";
const builtinIds = BUILTIN_PROVIDERS.map((provider) => provider.id);

/** Valid overrides, each with what the registry must then say. */
const validOverride = fc.record(
  {
    enabled: fc.boolean(),
    label: fc.string({ minLength: 1, maxLength: 12 }),
    env: fc.dictionary(fc.string({ minLength: 1, maxLength: 8 }), fc.string({ maxLength: 8 })),
  },
  { requiredKeys: [] },
);

/** Anything at all: arbitrary JSON where a provider's settings would go. */
const junk = fc.jsonValue({ maxDepth: 3 });

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

  it("applies every valid override whatever junk surrounds it", () => {
    fc.assert(
      fc.property(
        fc.dictionary(fc.constantFrom(...builtinIds), validOverride),
        fc.dictionary(fc.string({ maxLength: 10 }), junk),
        fc.dictionary(fc.string({ maxLength: 10 }), junk),
        fc.dictionary(fc.constantFrom("command", "extends", "bogus", "enable"), junk),
        (overrides, junkProviders, junkTop, junkFields) => {
          const providers: Record<string, unknown> = { ...junkProviders };
          for (const [id, override] of Object.entries(overrides)) {
            // Junk in other fields of the same entry must not cost the valid ones.
            providers[id] = { ...junkFields, ...override };
          }
          const text = JSON.stringify({ ...junkTop, providers });
          const config = interpretProvidersConfig(FILE, text);
          expect(
            config.providers.map((provider) => provider.id).slice(0, builtinIds.length),
          ).toEqual(builtinIds);
          for (const [id, override] of Object.entries(overrides)) {
            const provider = config.providers.find((candidate) => candidate.id === id)!;
            if (override.enabled !== undefined) expect(provider.enabled).toBe(override.enabled);
            if (override.label !== undefined) expect(provider.label).toBe(override.label);
            if (override.env !== undefined) expect(provider.env).toMatchObject(override.env);
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
