// How many database round trips a simple text turn makes: the turn runner's server work, from
// the queued task to the finished message, counted by a logger on the drizzle session. The bound
// is what the turn costs today; a change that adds a query to every turn fails here. Set
// SHOW_TURN_QUERIES=1 to print the statements.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AgentBackend, PromptInput } from "@deckhand/agent-backends";
import { createDb, type DbHandle, TaskRegistry, TaskWorker } from "@deckhand/db";
import type { ResolvedProvider } from "@deckhand/providers";
import { createTempRepository, type TempRepository } from "@deckhand/testkit";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSessionDomain, type SessionDomain } from "../session-domain.ts";
import { AgentTurns } from "./agent-turns.ts";

let database: DbHandle;
let scratch: string;
let repository: TempRepository;
let service: SessionDomain;
let turns: AgentTurns;

/** The statements drizzle sends, and the transactions it opens (each a BEGIN and a COMMIT). */
const counted = { statements: [] as string[], transactions: 0 };

/**
 * Counts what goes to the database through `database.db`: drizzle logs every statement it
 * prepares (inside transactions too, whose sessions share these options), and every transaction
 * goes through the session's `transaction`.
 */
function countQueries(handle: DbHandle): void {
  const session = (
    handle.db as unknown as {
      session: {
        options: { logger?: unknown };
        logger: unknown;
        transaction: (...args: unknown[]) => Promise<unknown>;
      };
    }
  ).session;
  const logger = { logQuery: (query: string) => counted.statements.push(query) };
  session.options.logger = logger;
  session.logger = logger;
  const transaction = session.transaction.bind(session);
  session.transaction = (...args: unknown[]) => {
    counted.transactions += 1;
    return transaction(...args);
  };
}

function resetCount(): void {
  counted.statements = [];
  counted.transactions = 0;
}

const provider: ResolvedProvider = {
  id: "scripted",
  label: "Scripted",
  transport: "acp",
  executable: "/bin/true",
  args: [],
  env: {},
  unset: [],
  agentType: null,
  profile: { writable: [], network: { internet: false, modelProxy: false } },
  serveFileReads: false,
  startTimeouts: { initializeMs: 1_000, sessionMs: 1_000 },
  loginAdvice: "",
};

/** A backend that answers every prompt with one line of text. */
function textBackend(): AgentBackend {
  return {
    async ensureSession() {
      return { agentSessionId: "scripted-session", resumed: false };
    },
    async prompt(input: PromptInput) {
      await input.onEvent({ type: "text", message_id: input.messageId, delta: "Done." });
      await input.onEvent({
        type: "turn_end",
        message_id: input.messageId,
        stop_reason: "end_turn",
      });
      return { stopReason: "end_turn", text: "Done." };
    },
    async cancel() {},
    async respondToPermission() {},
    async closeSession() {},
    async dispose() {},
    health: () => ({ status: "idle", pid: null, lastError: null }),
  };
}

beforeAll(async () => {
  database = await createDb({ dataDir: "memory://" });
  scratch = mkdtempSync(join(tmpdir(), "deckhand-turn-queries-"));
  repository = createTempRepository({ "README.md": "# demo\n" });
  service = createSessionDomain({
    database,
    projectsDir: join(scratch, "projects"),
    worktreesDir: join(scratch, "worktrees"),
  });
  turns = new AgentTurns({
    database,
    sessions: service,
    providers: { resolve: async () => provider },
    modelAccess: {
      serves: () => false,
      lease: () => Promise.reject(new Error("no model proxy in this test")),
    },
    workspaceAgent: { url: "http://127.0.0.1:9", token: null },
    createBackend: () => textBackend(),
    logger: pino({ level: "silent" }),
  });
  countQueries(database);
});

afterAll(async () => {
  await turns.stop();
  await database.close();
  repository.remove();
  rmSync(scratch, { recursive: true, force: true });
});

async function runTextTurn(sessionId: string, chatId: string, text: string) {
  const { message } = await service.messages.create(chatId, { agent: "scripted", text });
  resetCount();
  await turns.runTurn({
    session_id: sessionId,
    chat_id: chatId,
    user_message_id: message.id,
    agent: "scripted",
  });
  const result = { statements: counted.statements.length, transactions: counted.transactions };
  console.log(
    `a text turn: ${result.statements} statements in ${result.transactions} transactions`,
  );
  if (process.env.SHOW_TURN_QUERIES)
    console.log(counted.statements.map((query) => query.slice(0, 110)).join("\n"));
  return result;
}

describe("a simple text turn's queries", () => {
  it("stays within the turn's handful of round trips, first turn and next", async () => {
    const project = await service.projects.create({ repository_path: repository.path });
    const session = await service.sessions.create(project.id, {});
    const chat = await service.chats.create(session.id, {});

    const first = await runTextTurn(session.id, chat.id, "hello");
    const next = await runTextTurn(session.id, chat.id, "again");

    const [, answer] = await service.messages.list(chat.id);
    expect(answer).toMatchObject({ role: "assistant", status: "complete" });
    expect(answer!.parts).toEqual([{ position: 0, kind: "text", content: { text: "Done." } }]);
    expect(first.statements).toBeLessThanOrEqual(FIRST_TURN_STATEMENTS);
    expect(next.statements).toBeLessThanOrEqual(NEXT_TURN_STATEMENTS);
    // The streamed events' group commit; the turn's start and end are a statement each.
    expect(next.transactions).toBeLessThanOrEqual(1);
  });
});

/** Until `check` holds, or fails after a generous deadline. */
async function waitFor(check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("condition not met in 20 s");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe("a queued text turn's queries", () => {
  it("costs the turn's statements and the queue's handful: claim, completion, one claim after", async () => {
    const project = await service.projects.create({ repository_path: repository.path });
    const session = await service.sessions.create(project.id, {});
    const chat = await service.chats.create(session.id, {});
    // The queue's statements go through the handle, not drizzle: count them there too.
    const counting: DbHandle = {
      ...database,
      query: (text, parameters) => {
        counted.statements.push(text);
        return database.query(text, parameters);
      },
      notify: (channel, payload) => {
        counted.statements.push(`notify ${channel}`);
        return database.notify(channel, payload);
      },
    };
    const registry = new TaskRegistry();
    turns.register(registry);
    const worker = new TaskWorker({
      database: counting,
      registry,
      pollIntervalMs: 60_000,
      retainSucceededMs: Number.POSITIVE_INFINITY,
    });
    await worker.start();
    try {
      // A first turn makes the agent session's row; the second is the one counted.
      await service.messages.create(chat.id, { agent: "scripted", text: "first" });
      await waitFor(async () => (await service.messages.list(chat.id)).length === 2);
      await waitFor(async () => worker.activeCount === 0);
      const quiet = async () => {
        const before = counted.statements.length;
        await new Promise((resolve) => setTimeout(resolve, 50));
        return counted.statements.length === before;
      };
      await waitFor(quiet);
      resetCount();
      await service.messages.create(chat.id, { agent: "scripted", text: "again" });
      // Read straight through the handle, which neither count sees.
      await waitFor(async () => {
        const complete = await database.query<{ count: number }>(
          "select count(*)::int as count from messages where chat_id = $1 and status = 'complete' and role = 'assistant'",
          [chat.id],
        );
        return complete.rows[0]!.count === 2;
      });
      await waitFor(async () => worker.activeCount === 0);
      await waitFor(quiet);
      const statements = counted.statements.length;
      console.log(`a queued text turn: ${statements} statements, the message's creation with it`);
      if (process.env.SHOW_TURN_QUERIES)
        console.log(counted.statements.map((query) => query.slice(0, 110)).join("\n"));
      expect(statements).toBeLessThanOrEqual(QUEUED_TURN_STATEMENTS);
    } finally {
      await worker.stop();
    }
  });
});

/**
 * What a session's first text turn costs (its agent session row is made) and a later one: 21
 * and 17 before the message's insert and `turn_started` became one statement, and the turn's
 * end, its `turn_end` and `turn_finished` another.
 */
const FIRST_TURN_STATEMENTS = 16;
const NEXT_TURN_STATEMENTS = 12;
/**
 * A later turn through the queue, from the user message's creation to the worker idle again (27
 * before; the chat and its session are also read in one query now, and the task's insert and
 * its NOTIFY are one statement).
 */
const QUEUED_TURN_STATEMENTS = 20;
