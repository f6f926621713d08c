export { agentUsage, parseAgentArguments } from "./arguments.ts";
export { runAgentUntilSignalled } from "./run.ts";
