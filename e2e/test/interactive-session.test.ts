// The interactive path end to end: `deckhand up` as its own process (embedded database, local
// workspace agent, a fake model upstream from its config file, the scripted ACP agent as a
// custom provider), then a project, a session, and a message to each agent — driven only
// through the public HTTP and WebSocket API. Each turn must stream events, leave a pending
// change attributed to its agent, and that change must become a commit on the session branch.
import { readdirSync, readFileSync } from "node:fs";
import {
  type FakeModel,
  SessionStreamClient,
  type SpawnedService,
  scriptedAcpAgentPath,
  type TempRepository,
  turn,
} from "@deckhand/testkit";
import {
  type Chat,
  type Message,
  type PendingChange,
  type Project,
  ServerPath,
  type Session,
  type SessionEvent,
  serverPath,
} from "@deckhand/wire";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DeckhandUp, runTurnAndWait, startDeckhandUp, UPSTREAM_KEY } from "./deckhand-up.ts";

let up: DeckhandUp;
let repository: TempRepository;
let model: FakeModel;
let server: SpawnedService;

async function api<Body>(
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: Body }> {
  const response = await fetch(`${server.url}${path}`, {
    method,
    ...(body !== undefined
      ? { headers: { "content-type": "application/json" }, body: JSON.stringify(body) }
      : {}),
  });
  const text = await response.text();
  return { status: response.status, body: (text ? JSON.parse(text) : null) as Body };
}

beforeAll(async () => {
  up = await startDeckhandUp();
  ({ repository, model, server } = up);
});

afterAll(async () => {
  await up?.close();
});

describe("an interactive session through deckhand up", () => {
  let session: Session;
  let chat: Chat;
  let stream: SessionStreamClient;

  beforeAll(async () => {
    const project = await api<Project>("POST", ServerPath.projects, {
      repository_path: repository.path,
    });
    expect(project.status).toBe(201);
    const opened = await api<Session>(
      "POST",
      serverPath(ServerPath.projectSessions, { project_id: project.body.id }),
      { title: "e2e" },
    );
    expect(opened.status).toBe(201);
    session = opened.body;
    chat = (
      await api<Chat>("POST", serverPath(ServerPath.sessionChats, { session_id: session.id }), {})
    ).body;
    stream = new SessionStreamClient(
      server.url,
      serverPath(ServerPath.sessionStream, { session_id: session.id }),
    );
    await stream.opened;
  });

  afterAll(async () => {
    await stream?.close();
  });

  /** Sends a message and waits until its turn has finished; returns the turn's events. */
  function runTurn(agent: string, text: string): Promise<SessionEvent[]> {
    return runTurnAndWait(api, stream, chat.id, agent, text);
  }

  async function applyOnly(agent: string, path: string): Promise<string> {
    const pending = await api<{ pending_changes: PendingChange[] }>(
      "GET",
      `${serverPath(ServerPath.sessionPendingChanges, { session_id: session.id })}?status=pending`,
    );
    const change = pending.body.pending_changes.find((candidate) => candidate.path === path);
    expect(change, `pending change for ${path}`).toMatchObject({ agent, status: "pending" });
    expect(change!.diff).toContain(`+++ b/${path}`);
    const applied = await api<{ commit: string }>(
      "POST",
      serverPath(ServerPath.applyPendingChange, { pending_change_id: change!.id }),
    );
    expect(applied.status).toBe(200);
    return applied.body.commit;
  }

  it("the native agent applies a patch through the fake model; its change becomes a commit", async () => {
    model.script([
      turn.functionCall("apply_patch", {
        patch: [
          "*** Begin Patch",
          "*** Add File: native.txt",
          "+written by the native agent",
          "*** End Patch",
        ].join("\n"),
      }),
      turn.text("I added native.txt."),
    ]);
    const events = await runTurn("deckhand", "add native.txt");
    const types = events.map((event) => event.event.type);
    expect(types).toContain("tool_call");
    expect(types).toContain("tool_update");
    expect(types).toContain("text");
    expect(types.at(-1)).toBe("turn_finished");
    expect(events.find((event) => event.event.type === "turn_end")?.event).toMatchObject({
      stop_reason: "end_turn",
    });
    // The model was reached through Deckhand's proxy, which sent the upstream key itself.
    expect(model.requests.length).toBeGreaterThanOrEqual(2);
    const headers = JSON.stringify(model.requests[0]!.headers);
    expect(headers).toContain(UPSTREAM_KEY);

    const commit = await applyOnly("deckhand", "native.txt");
    expect(repository.git("rev-parse", session.branch)).toBe(commit);
    expect(repository.git("show", `${session.branch}:native.txt`)).toBe(
      "written by the native agent",
    );
  });

  it("the scripted ACP agent writes a file through the fs API; its change becomes a commit", async () => {
    const events = await runTurn("scripted", "write acp.txt written by the ACP agent");
    const types = events.map((event) => event.event.type);
    expect(types).toContain("text");
    expect(types.at(-1)).toBe("turn_finished");
    const commit = await applyOnly("scripted", "acp.txt");
    expect(repository.git("rev-parse", session.branch)).toBe(commit);
    expect(repository.git("show", `${session.branch}:acp.txt`)).toBe("written by the ACP agent");

    const messages = await api<{ messages: Message[] }>(
      "GET",
      serverPath(ServerPath.chatMessages, { chat_id: chat.id }),
    );
    const answers = messages.body.messages.filter((message) => message.role === "assistant");
    expect(answers.map((message) => [message.agent, message.status])).toEqual([
      ["deckhand", "complete"],
      ["scripted", "complete"],
    ]);
  });

  it("stops cleanly on SIGTERM, stopping its agents", async () => {
    // The scripted ACP agent from the turn above is still running, idle in the agent pool.
    const agents = descendantsOf(server.child.pid!).filter((pid) =>
      commandLineOf(pid).includes(scriptedAcpAgentPath),
    );
    expect(agents.length, "scripted ACP agent processes before shutdown").toBeGreaterThan(0);
    server.child.kill("SIGTERM");
    expect(await server.exited).toEqual({ code: 0, signal: null });
    expect(agents.filter(isRunning), "agent processes left after shutdown").toEqual([]);
  });
});

/** Every process below `root` in the process tree, read from /proc. */
function descendantsOf(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const parent = parentOf(Number(entry));
    if (parent === null) continue;
    children.set(parent, [...(children.get(parent) ?? []), Number(entry)]);
  }
  const found: number[] = [];
  const queue = [root];
  while (queue.length > 0) {
    for (const child of children.get(queue.shift()!) ?? []) {
      found.push(child);
      queue.push(child);
    }
  }
  return found;
}

/** `/proc/<pid>/stat` fields after the command name, which may itself hold spaces. */
function statFields(pid: number): string[] | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  } catch {
    return null;
  }
}

function parentOf(pid: number): number | null {
  const fields = statFields(pid);
  return fields ? Number(fields[1]) : null;
}

function commandLineOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ");
  } catch {
    return "";
  }
}

/** Alive and not a zombie waiting to be reaped. */
function isRunning(pid: number): boolean {
  const fields = statFields(pid);
  return fields !== null && fields[0] !== "Z";
}
