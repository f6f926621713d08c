// A session's agent, model and mode, and its base branch: checked against the providers snapshot
// when chosen, stored on the session, and carried by each turn's task (a message may override
// them). PGlite, real git; the snapshot is a fixed one, as the provider registry would answer.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createDb, type DbHandle, tasks } from "@deckhand/db";
import { createTempRepository, type TempRepository } from "@deckhand/testkit";
import type { ProviderEntry, ProvidersSnapshot } from "@deckhand/wire";
import { eq } from "drizzle-orm";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createSessionDomain, type SessionDomain } from "../session-domain.ts";
import { SessionsError } from "../sessions-error.ts";
import { AgentTurnPayloadSchema } from "../store/agent-turn-tasks.ts";

function provider(overrides: Partial<ProviderEntry>): ProviderEntry {
  return {
    id: "scripted",
    label: "Scripted",
    transport: "acp",
    builtin: false,
    enabled: true,
    status: "ready",
    command: ["scripted"],
    resolved_path: "/bin/scripted",
    install_hint: null,
    version: "1.2.3",
    models: [
      { id: "scripted-large", name: "Scripted Large", description: null },
      { id: "scripted-small", name: "Scripted Small", description: null },
    ],
    current_model: "scripted-large",
    modes: [
      { id: "ask", name: "Ask", description: null },
      { id: "code", name: "Code", description: null },
    ],
    current_mode: "ask",
    commands: [],
    last_error: null,
    probed_at: "2026-01-01T00:00:00.000Z",
    ...overrides,
  };
}

const snapshot: ProvidersSnapshot = {
  providers: [
    provider({}),
    provider({ id: "other", models: [], modes: [], current_model: null, current_mode: null }),
    provider({ id: "off", enabled: false, status: "disabled" }),
    provider({ id: "slow", status: "starting" }),
  ],
  diagnostics: [],
  sandbox: { kind: "none", reason: "not configured in this test" },
};

let database: DbHandle;
let scratch: string;
let repository: TempRepository;
let service: SessionDomain;

beforeAll(async () => {
  database = await createDb({ dataDir: "memory://" });
});
afterAll(async () => {
  await database.close();
});
beforeEach(() => {
  scratch = mkdtempSync(join(tmpdir(), "deckhand-agent-choice-"));
  repository = createTempRepository({ "README.md": "# demo\n" });
  service = createSessionDomain({
    database,
    projectsDir: join(scratch, "projects"),
    worktreesDir: join(scratch, "worktrees"),
    agentCatalog: async () => snapshot,
  });
});
afterEach(() => {
  repository.remove();
  rmSync(scratch, { recursive: true, force: true });
});

async function refusal(promise: Promise<unknown>): Promise<SessionsError> {
  const error = await promise.then(
    () => null,
    (caught: unknown) => caught,
  );
  expect(SessionsError.isInstance(error), String(error)).toBe(true);
  return error as SessionsError;
}

async function payloadOf(taskId: number) {
  const [row] = await database.db.select().from(tasks).where(eq(tasks.id, taskId));
  return AgentTurnPayloadSchema.parse(row!.payload);
}

describe("a session's agent, model and mode", () => {
  it("stores the choice, and each turn of that agent carries it unless the message overrides it", async () => {
    const project = await service.projects.create({ repository_path: repository.path });
    const session = await service.sessions.create(project.id, {
      agent: "scripted",
      model: "scripted-small",
      mode: "code",
    });
    expect(session).toMatchObject({ agent: "scripted", model: "scripted-small", mode: "code" });
    expect(await service.sessions.get(session.id)).toMatchObject({ model: "scripted-small" });
    const chat = await service.chats.create(session.id, {});

    const plain = await service.messages.create(chat.id, { agent: "scripted", text: "hi" });
    expect(await payloadOf(plain.task_id)).toMatchObject({ model: "scripted-small", mode: "code" });

    const overridden = await service.messages.create(chat.id, {
      agent: "scripted",
      text: "hi",
      model: "scripted-large",
    });
    expect(await payloadOf(overridden.task_id)).toMatchObject({
      model: "scripted-large",
      mode: "code",
    });

    // Another agent keeps its own defaults: the session's model is not one of its models.
    const other = await service.messages.create(chat.id, { agent: "other", text: "hi" });
    expect(await payloadOf(other.task_id)).toMatchObject({ model: null, mode: null });
  });

  it("refuses a model or mode the agent does not offer, naming the ones it does", async () => {
    const project = await service.projects.create({ repository_path: repository.path });
    const model = await refusal(
      service.sessions.create(project.id, { agent: "scripted", model: "gpt-nothing" }),
    );
    expect(model.code).toBe("invalid_request");
    expect(model.message).toBe(
      'model "gpt-nothing" is not one of scripted\'s models: "scripted-large", "scripted-small"',
    );
    const mode = await refusal(
      service.sessions.create(project.id, { agent: "other", mode: "code" }),
    );
    expect(mode.message).toContain("other offers no modes to choose from");
    const session = await service.sessions.create(project.id, { agent: "scripted" });
    const chat = await service.chats.create(session.id, {});
    const message = await refusal(
      service.messages.create(chat.id, { agent: "scripted", text: "hi", mode: "yolo" }),
    );
    expect(message.message).toBe('mode "yolo" is not one of scripted\'s modes: "ask", "code"');
  });

  it("asks to try again shortly for an agent that is still starting, rather than calling it broken", async () => {
    const project = await service.projects.create({ repository_path: repository.path });
    const refused = await service.sessions.create(project.id, { agent: "slow" }).then(
      () => null,
      (error: unknown) => error,
    );
    expect(SessionsError.isInstance(refused)).toBe(true);
    expect(refused).toMatchObject({
      code: "busy",
      message:
        "agent slow is still starting (its probe has not finished); try again in a few seconds",
    });
  });

  it("refuses an agent that is not ready and enabled, an unknown one, and a model without an agent", async () => {
    const project = await service.projects.create({ repository_path: repository.path });
    expect((await refusal(service.sessions.create(project.id, { agent: "off" }))).message).toBe(
      "agent off is disabled; choose a ready, enabled agent",
    );
    expect(
      (await refusal(service.sessions.create(project.id, { agent: "nobody" }))).message,
    ).toContain('agent "nobody" is not a provider');
    expect(
      (await refusal(service.sessions.create(project.id, { model: "scripted-small" }))).message,
    ).toBe("model and mode belong to an agent: give agent too");
  });
});

describe("a session's base branch", () => {
  it("starts the session branch from base_branch instead of the default branch", async () => {
    repository.git("checkout", "--quiet", "-b", "release");
    repository.git("commit", "--quiet", "--allow-empty", "-m", "on release");
    const release = repository.git("rev-parse", "HEAD");
    repository.git("checkout", "--quiet", "main");
    const project = await service.projects.create({ repository_path: repository.path });
    expect(project.default_branch).toBe("main");
    const session = await service.sessions.create(project.id, { base_branch: "release" });
    expect(session.base_commit).toBe(release);
    const missing = await refusal(service.sessions.create(project.id, { base_branch: "nope" }));
    expect(missing.code).toBe("invalid_request");
    expect(missing.message).toContain('base_branch "nope" is no branch or commit');
  });
});
