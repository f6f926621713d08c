import { z } from "zod";

export const AgentHealthResponseSchema = z.object({
  status: z.literal("ok"),
  version: z.string(),
  root: z.string(),
  running_processes: z.number().int(),
});
export type AgentHealthResponse = z.infer<typeof AgentHealthResponseSchema>;
