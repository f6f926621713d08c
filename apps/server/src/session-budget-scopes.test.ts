// The budget scopes a session agent's model usage counts against: its own job and its session,
// read through the session domain. PGlite, a real repository and session.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createDb, type DbHandle } from "@deckhand/db";
import { createSessionDomain, type SessionDomain } from "@deckhand/sessions";
import { createTempRepository, type TempRepository } from "@deckhand/testkit";
import { UsageJobId } from "@deckhand/wire";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SessionBudgetScopes } from "./session-budget-scopes.ts";

let database: DbHandle;
let scratch: string;
let repository: TempRepository;
let domain: SessionDomain;

beforeAll(async () => {
  database = await createDb({ dataDir: "memory://" });
  scratch = mkdtempSync(join(tmpdir(), "deckhand-session-budget-scopes-"));
  repository = createTempRepository({ "README.md": "# demo\n" });
  domain = createSessionDomain({
    database,
    projectsDir: join(scratch, "projects"),
    worktreesDir: join(scratch, "worktrees"),
  });
});

afterAll(async () => {
  await database.close();
  repository.remove();
  rmSync(scratch, { recursive: true, force: true });
});

describe("SessionBudgetScopes", () => {
  it("counts an agent session's job against itself and its session, whose scope sums every agent", async () => {
    const project = await domain.projects.forRepository({ repository_path: repository.path });
    const session = await domain.sessions.create(project.id, { title: "budgeted" });
    const codex = await domain.agentSessions.ensure(session.id, "codex", null);
    const claude = await domain.agentSessions.ensure(session.id, "claude", null);
    const scopes = new SessionBudgetScopes(domain.agentSessions);

    const jobId = UsageJobId.agentSession(codex);
    expect(await scopes.scopesOf(jobId)).toEqual([
      {
        kind: "job",
        id: jobId,
        label: `the codex agent of session ${session.id.slice(0, 8)}`,
        limit: null,
        selector: { jobIds: [jobId] },
        advice: "raise modelBudgets.job in config.json",
      },
      {
        kind: "session",
        id: session.id,
        label: 'session "budgeted"',
        limit: null,
        selector: { jobIds: [jobId, UsageJobId.agentSession(claude)] },
        advice: "raise modelBudgets.session in config.json, or go on in a new session",
      },
    ]);
  });

  it("names an untitled session by its id, and knows no other kind of job", async () => {
    const project = await domain.projects.forRepository({ repository_path: repository.path });
    const session = await domain.sessions.create(project.id, {});
    const scopes = new SessionBudgetScopes(domain.agentSessions);
    expect(await scopes.sessionScope(session.id)).toMatchObject({
      label: `session ${session.id.slice(0, 8)}`,
      selector: { jobIds: [] },
    });
    expect(await scopes.scopesOf("batch-workspace:8e1a7c52-54e4-4a8e-9a3c-1a2b3c4d5e6f")).toBe(
      null,
    );
    expect(await scopes.scopesOf("provider-probe:codex:1")).toBe(null);
    // Only config.json limits an agent session's scopes: without them no check reads them.
    expect(scopes.limitlessKinds(UsageJobId.agentSession(session.id))).toEqual(["job", "session"]);
    expect(scopes.limitlessKinds("batch-workspace:8e1a7c52-54e4-4a8e-9a3c-1a2b3c4d5e6f")).toBe(
      null,
    );
    expect(
      await scopes.scopesOf(UsageJobId.agentSession("8e1a7c52-54e4-4a8e-9a3c-1a2b3c4d5e6f")),
    ).toBe(null);
    await expect(scopes.sessionScope("8e1a7c52-54e4-4a8e-9a3c-1a2b3c4d5e6f")).rejects.toMatchObject(
      { code: "not_found" },
    );
  });
});
