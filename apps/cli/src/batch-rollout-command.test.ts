import { type BatchChangeRollout, WireEnv, WireHeader } from "@deckhand/wire";
import { describe, expect, it } from "vitest";
import { runBatchCommand } from "./batch-command.ts";
import { rolloutText, runRolloutCommand } from "./batch-rollout-command.ts";

const now = Date.parse("2030-06-03T10:00:00Z");
const rollout: BatchChangeRollout = {
  name: "paced",
  paced: true,
  settings: {
    spec: { hourlyLimit: 2, canary: { count: 1 } },
    server_windows: [{ rate: "10/hour", timezone: "Europe/Berlin" }],
  },
  state: "waiting",
  reason: "the hourly limit of 2 is used up until then",
  next_at: "2030-06-03T11:00:00.000Z",
  open: 2,
  published_last_hour: 2,
  canary: { count: 1, published: 1, passed: 1, failing: [] },
  pending: [
    {
      changeset_id: "5f0c6a1e-8a4e-4a35-9a52-6e3f9a1b2c3d",
      repository: "github.com/acme/web",
      branch: "say-hello",
      draft: false,
      canary: false,
      at: "2030-06-03T11:00:00.000Z",
      waiting_for: "hourly_limit",
      detail: "the hourly limit of 2 is used up until then",
    },
    {
      changeset_id: "6f0c6a1e-8a4e-4a35-9a52-6e3f9a1b2c3d",
      repository: "github.com/acme/docs",
      branch: "say-hello",
      draft: false,
      canary: false,
      at: null,
      waiting_for: "concurrent_limit",
      detail:
        "2 pull requests are open, the concurrent limit; the next goes out when one merges or closes",
    },
  ],
};

describe("deckhand batch rollout", () => {
  it("prints the pace, the state and each waiting pull request with when it goes out", () => {
    expect(rolloutText(rollout, now)).toEqual([
      "paced: waiting, 2 waiting, 2 open, 2 opened in the last hour",
      "pace: 2 per hour, 1 canary first, 1 server window(s)",
      "canary: 1 of 1 passed",
      "the hourly limit of 2 is used up until then",
      "next: in 1 h (2030-06-03T11:00:00.000Z)",
      "",
      "REPOSITORY            BRANCH     GOES OUT                           WAITING FOR",
      "github.com/acme/web   say-hello  in 1 h (2030-06-03T11:00:00.000Z)  the hourly limit of 2 is used up until then",
      "github.com/acme/docs  say-hello  -                                  2 pull requests are open, the concurrent limit; the next goes out when one merges or closes",
    ]);
  });

  it("asks the server's rollout route with the token, and prints JSON when asked", async () => {
    const seen: { url: string; authorization: string | null }[] = [];
    const fetch = (async (url: string | URL, init?: RequestInit) => {
      seen.push({
        url: String(url),
        authorization: new Headers(init?.headers).get(WireHeader.authorization),
      });
      return new Response(JSON.stringify(rollout), { status: 200 });
    }) as typeof globalThis.fetch;
    const written: string[] = [];
    const code = await runRolloutCommand(["paced", "--server", "http://127.0.0.1:9", "--json"], {
      stdout: { write: (text: string) => written.push(text) },
      env: { [WireEnv.adminToken]: "admin-token-0123456789" },
      fetch,
    });
    expect(code).toBe(0);
    expect(seen).toEqual([
      {
        url: "http://127.0.0.1:9/api/batch-changes/paced/rollout",
        authorization: "Bearer admin-token-0123456789",
      },
    ]);
    expect(JSON.parse(written.join(""))).toEqual(rollout);
  });

  it("is listed in the batch command's help and refuses a missing name", async () => {
    const out: string[] = [];
    const err: string[] = [];
    const io = {
      stdout: { write: (text: string) => out.push(text) },
      stderr: { write: (text: string) => err.push(text) },
      cwd: process.cwd(),
    };
    expect(await runBatchCommand(["help"], io)).toBe(0);
    expect(out.join("")).toContain("rollout <name>");
    expect(await runBatchCommand(["rollout", "--help"], io)).toBe(0);
    expect(out.join("")).toContain("Usage: deckhand batch rollout <name> [options]");
    expect(await runBatchCommand(["rollout"], io)).toBe(2);
    expect(err.join("")).toContain("rollout takes one batch change name");
  });
});
