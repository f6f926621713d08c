import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";
import { ProcessClient } from "@deckhand/process-manager";
import { FileClient } from "@deckhand/workspace-files";
import type { AgentSessionContext } from "../backend.ts";
import { AcpFiles } from "./acp-files.ts";
import { AcpTerminals } from "./acp-terminals.ts";
import type { AgentProcess } from "./agent-process.ts";

/** What Deckhand serves an ACP agent as its client. */
export interface AcpClientHandlers {
  onUpdate(notification: acp.SessionNotification): void;
  requestPermission(params: acp.RequestPermissionRequest): Promise<acp.RequestPermissionResponse>;
  files: AcpFiles;
  terminals: AcpTerminals;
  /** Applied to terminal output before it reaches the agent (and so its model). */
  redact(text: string): string;
}

/**
 * The agent's `fs` and `terminal` requests, served through the workspace agent of `context`:
 * files guarded to the worktree, terminals as processes of the chat.
 */
export function workspaceRequestHandlers(context: AgentSessionContext): {
  files: AcpFiles;
  terminals: AcpTerminals;
} {
  const workspaceToken =
    context.workspaceAgent.token === null ? {} : { token: context.workspaceAgent.token };
  const files = new AcpFiles(
    new FileClient({
      baseUrl: context.workspaceAgent.url,
      ...workspaceToken,
      root: context.worktreePath,
    }),
    context.worktreePath,
  );
  const terminals = new AcpTerminals(
    new ProcessClient({
      baseUrl: context.workspaceAgent.url,
      ...workspaceToken,
      chatId: context.chatId,
    }),
    context.worktreePath,
  );
  return { files, terminals };
}

/** Connects to the agent over its stdio, serving its requests with `handlers`. */
export function connectAcpClient(
  agentProcess: AgentProcess,
  handlers: AcpClientHandlers,
): acp.ClientConnection {
  const { files, terminals } = handlers;
  const app = acp
    .client({ name: "deckhand" })
    .onNotification(acp.methods.client.session.update, ({ params }) => handlers.onUpdate(params))
    .onRequest(acp.methods.client.session.requestPermission, ({ params }) =>
      handlers.requestPermission(params),
    )
    .onRequest(acp.methods.client.fs.readTextFile, ({ params }) => files.read(params))
    .onRequest(acp.methods.client.fs.writeTextFile, ({ params }) => files.write(params))
    .onRequest(acp.methods.client.terminal.create, ({ params }) => terminals.create(params))
    // Terminal output goes to the agent's model: a secret in it is redacted before it leaves.
    .onRequest(acp.methods.client.terminal.output, async ({ params }) => {
      const answer = await terminals.output(params);
      return { ...answer, output: handlers.redact(answer.output) };
    })
    .onRequest(acp.methods.client.terminal.waitForExit, ({ params, signal }) =>
      terminals.waitForExit(params, signal),
    )
    .onRequest(acp.methods.client.terminal.kill, ({ params }) => terminals.kill(params))
    .onRequest(acp.methods.client.terminal.release, ({ params }) => terminals.release(params));
  const { child } = agentProcess;
  return app.connect(
    acp.ndJsonStream(
      Writable.toWeb(child.stdin!) as WritableStream<Uint8Array>,
      Readable.toWeb(child.stdout!) as ReadableStream<Uint8Array>,
    ),
  );
}
