// Reads a V8 `.cpuprofile` (node --cpu-prof) and says where the time went: self time by owner
// (a Deckhand package, an npm package, Node's internals, the garbage collector, idle), the
// hottest functions, and a timeline of which owner was busiest in each slice of the run.
//
//   node bench/support/cpu-profile-summary.ts FILE.cpuprofile [--slices 500] [--top 25]
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** Who a frame belongs to: `@deckhand/<package>`, an npm package, `node:internal`, or V8's. */
export function ownerOf(url: string, functionName: string): string {
  if (url === "") {
    if (functionName.startsWith("(")) return functionName;
    return "(native)";
  }
  if (url.startsWith("node:")) return "node:internal";
  const npm = /node_modules\/(?:\.pnpm\/[^/]+\/node_modules\/)?((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (npm) return npm[1]!;
  const own = /\/(packages|apps)\/([^/]+)\/|\/(db|bench|e2e)\//.exec(url);
  if (own) return own[2] ? `${own[1]}/${own[2]}` : own[3]!;
  return url.replace(/^file:\/\//, "");
}

export interface ProfileSummary {
  totalMs: number;
  byOwner: [string, number][];
  byFunction: [string, number][];
  timeline: { fromMs: number; busiest: [string, number][] }[];
}

export function summarizeCpuProfile(profile: CpuProfile, sliceMs = 500, top = 25): ProfileSummary {
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
  const byOwner = new Map<string, number>();
  const byFunction = new Map<string, number>();
  const slices = new Map<number, Map<string, number>>();
  let clock = 0;
  for (let index = 0; index < profile.samples.length; index += 1) {
    const ms = (profile.timeDeltas[index] ?? 0) / 1000;
    clock += ms;
    const node = nodes.get(profile.samples[index]!)!;
    const { functionName, url, lineNumber } = node.callFrame;
    const owner = ownerOf(url, functionName);
    byOwner.set(owner, (byOwner.get(owner) ?? 0) + ms);
    const label = `${functionName || "(anonymous)"} ${url.replace(/^.*\/(?=[^/]+\/[^/]+$)/, "")}:${lineNumber + 1}`;
    byFunction.set(label, (byFunction.get(label) ?? 0) + ms);
    const slice = Math.floor(clock / sliceMs) * sliceMs;
    const owners = slices.get(slice) ?? new Map<string, number>();
    owners.set(owner, (owners.get(owner) ?? 0) + ms);
    slices.set(slice, owners);
  }
  const sorted = (map: Map<string, number>) =>
    [...map]
      .sort((left, right) => right[1] - left[1])
      .map(([key, ms]): [string, number] => [key, Math.round(ms)]);
  return {
    totalMs: Math.round(clock),
    byOwner: sorted(byOwner),
    byFunction: sorted(byFunction).slice(0, top),
    timeline: [...slices].map(([fromMs, owners]) => ({
      fromMs,
      busiest: sorted(owners).slice(0, 3),
    })),
  };
}

export function printProfileSummary(summary: ProfileSummary): void {
  console.log(`sampled ${summary.totalMs} ms`);
  console.log("self time by owner:");
  for (const [owner, ms] of summary.byOwner.slice(0, 30)) {
    console.log(`  ${String(ms).padStart(6)} ms  ${owner}`);
  }
  console.log("hottest functions (self time):");
  for (const [label, ms] of summary.byFunction) {
    console.log(`  ${String(ms).padStart(6)} ms  ${label}`);
  }
  console.log("timeline (busiest owners per slice):");
  for (const slice of summary.timeline) {
    const text = slice.busiest.map(([owner, ms]) => `${owner} ${ms}`).join(", ");
    console.log(`  ${String(slice.fromMs).padStart(6)} ms  ${text}`);
  }
}

if (import.meta.main) {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { slices: { type: "string", default: "500" }, top: { type: "string", default: "25" } },
  });
  for (const file of positionals) {
    const profile = JSON.parse(readFileSync(file, "utf8")) as CpuProfile;
    console.log(`== ${file}`);
    printProfileSummary(summarizeCpuProfile(profile, Number(values.slices), Number(values.top)));
  }
}
