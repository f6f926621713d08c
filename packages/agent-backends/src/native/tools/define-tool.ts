import { z } from "zod";
import type { NativeTool, ToolContext } from "./tool-context.ts";

/** A tool whose JSON Schema is derived from its zod schema, so the two cannot drift apart. */
export function defineTool<Schema extends z.ZodType, Result>(definition: {
  name: string;
  description: string;
  schema: Schema;
  execute(args: z.output<Schema>, context: ToolContext): Promise<Result>;
}): NativeTool<Schema, Result> {
  // The input side: fields with defaults are optional for the model.
  const { $schema: _, ...parameters } = z.toJSONSchema(definition.schema, { io: "input" });
  return { ...definition, parameters };
}
