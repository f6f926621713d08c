// The Deckhand extensions for operating at scale: a batch change's publishing pace (`rollout:`)
// and a codingAgent step's model budget, read and checked like the rest of the spec.
import { describe, expect, it } from "vitest";
import { formatDiagnostic } from "./diagnostics.ts";
import { parseBatchSpec } from "./parse-batch-spec.ts";

const base = `version: 3
name: paced
on:
  - repository: github.com/acme/api
steps:
  - codingAgent:
      type: codex
      prompt: fix it
      budget:
        tokens: 2000000
        cost: 5
    image: node:22
changesetTemplate:
  title: t
  branch: b
  commit:
    message: m
  published: true
`;

function problems(text: string): string[] {
  return parseBatchSpec(text, { file: "spec.yaml" }).diagnostics.map((diagnostic) =>
    formatDiagnostic(diagnostic).slice("spec.yaml".length + 1),
  );
}

describe("the rollout extension", () => {
  it("reads a pace, windows with time zones and a canary", () => {
    const parsed = parseBatchSpec(
      `${base}rollout:
  hourlyLimit: 10
  concurrentLimit: 25
  canary:
    count: 3
  windows:
    - rate: 10/hour
      days: [Monday, friday]
      start: "09:00"
      end: "17:30"
      timezone: Europe/Berlin
    - rate: 0
`,
      { file: "spec.yaml" },
    );
    expect(parsed.diagnostics).toEqual([]);
    expect(parsed.spec?.rollout).toEqual({
      hourlyLimit: 10,
      concurrentLimit: 25,
      canary: { count: 3 },
      windows: [
        {
          rate: "10/hour",
          days: ["Monday", "friday"],
          start: "09:00",
          end: "17:30",
          timezone: "Europe/Berlin",
        },
        { rate: 0 },
      ],
    });
    expect(parsed.spec?.steps?.[0]?.codingAgent?.budget).toEqual({ tokens: 2_000_000, cost: 5 });
  });

  it("says where a window is wrong and how to write it", () => {
    expect(
      problems(`${base}rollout:
  hourlyLimit: 0
  windows:
    - rate: 10/day
      days: [someday]
      start: "22:00"
      end: "06:00"
      timezone: Mars/Olympus
    - rate: unlimited
      start: "08:00"
`),
    ).toEqual([
      "20:16: rollout.hourlyLimit: must be at least 1; got 0",
      '22:13: rollout.windows[0].rate: must be "unlimited", "N/second", "N/minute", "N/hour" or 0',
      "23:14: rollout.windows[0].days[0]: must be an English day name, e.g. monday",
      "25:12: rollout.windows[0].end: end (06:00) must be after start (22:00); split a window across midnight in two",
      "26:17: rollout.windows[0].timezone: must be an IANA time zone name, e.g. Europe/Berlin or UTC",
      "27:7: rollout.windows[1].end: give both start and end, or neither (the whole day)",
    ]);
  });

  it("refuses a budget that limits nothing sensible", () => {
    expect(problems(base.replace("tokens: 2000000", "tokens: 0"))).toEqual([
      "10:17: steps[0].codingAgent.budget.tokens: must be at least 1; got 0",
    ]);
  });
});
