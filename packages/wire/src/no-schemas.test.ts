import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import * as index from "./index.ts";
import * as noSchemas from "./no-schemas.ts";

/** The modules `entry` loads at run time (type-only imports are erased), and their packages. */
function runtimeImports(entry: string): { modules: string[]; packages: string[] } {
  const modules: string[] = [];
  const packages = new Set<string>();
  const pending = [entry];
  while (pending.length > 0) {
    const file = pending.pop()!;
    if (modules.includes(file)) continue;
    modules.push(file);
    const text = readFileSync(file, "utf8");
    for (const match of text.matchAll(/^(?:import|export)\s+(type\s+)?[^;]*?from\s+"([^"]+)"/gm)) {
      const [, typeOnly, specifier] = match;
      if (typeOnly !== undefined || specifier === undefined) continue;
      if (specifier.startsWith(".")) {
        if (specifier.endsWith(".ts")) pending.push(resolve(dirname(file), specifier));
      } else {
        packages.add(specifier);
      }
    }
  }
  return { modules, packages: [...packages] };
}

describe("@deckhand/wire/no-schemas", () => {
  it("loads no zod, so a client can send its first request before building schemas", () => {
    const { modules, packages } = runtimeImports(
      fileURLToPath(new URL("./no-schemas.ts", import.meta.url)),
    );
    expect(packages).toEqual([]);
    expect(modules.length).toBeGreaterThan(1);
  });

  it("exports only what the package's index exports, as the same values", () => {
    const everything: Record<string, unknown> = { ...index };
    for (const [name, value] of Object.entries(noSchemas)) {
      expect(everything[name], name).toBe(value);
    }
  });
});
