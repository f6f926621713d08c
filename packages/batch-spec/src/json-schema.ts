// The JSON Schema of the batch spec, generated from the zod model so the two cannot disagree.
// It is checked in as batch-spec.schema.json for editors and non-TypeScript tools.
import { z } from "zod";
import { BatchSpecSchema } from "./batch-spec-schema.ts";

/** The JSON Schema (draft-07, which editors' YAML support reads) of a batch spec as written. */
export function batchSpecJsonSchema(): Record<string, unknown> {
  return z.toJSONSchema(BatchSpecSchema, { target: "draft-7", io: "input" }) as Record<
    string,
    unknown
  >;
}

/** The schema as the checked-in file holds it. */
export function renderBatchSpecJsonSchema(): string {
  return `${JSON.stringify(batchSpecJsonSchema(), null, 2)}\n`;
}
