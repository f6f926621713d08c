import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { batchSpecJsonSchema } from "./json-schema.ts";

const checkedIn = fileURLToPath(new URL("../batch-spec.schema.json", import.meta.url));

describe("JSON Schema", () => {
  it("batch-spec.schema.json matches the zod model (run `pnpm --filter @deckhand/batch-spec generate` when it does not)", () => {
    // Compared as data: the repository formatter owns the file's layout.
    expect(JSON.parse(readFileSync(checkedIn, "utf8"))).toEqual(batchSpecJsonSchema());
  });

  it("is a draft-07 schema that rejects unknown fields and requires a name", () => {
    const schema = batchSpecJsonSchema();
    expect(schema.$schema).toBe("http://json-schema.org/draft-07/schema#");
    expect(schema.additionalProperties).toBe(false);
    expect(schema.required).toEqual(["name"]);
    const properties = schema.properties as Record<string, { description?: string }>;
    expect(Object.keys(properties)).toEqual([
      "$schema",
      "version",
      "name",
      "description",
      "on",
      "workspaces",
      "steps",
      "transformChanges",
      "importChangesets",
      "changesetTemplate",
      "changesetHooks",
      "rollout",
    ]);
  });
});
