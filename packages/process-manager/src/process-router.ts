import {
  type ErrorHandlingOptions,
  errorResponse,
  HttpError,
  httpStatusOf,
  installErrorHandling,
  parseJsonBody,
  parseQuery,
} from "@deckhand/http-kit";
import {
  AncestorChatIdsSchema,
  ChatIdSchema,
  ListProcessesQuerySchema,
  type ListProcessesResponse,
  ProcessOutputQuerySchema,
  type ProcessOutputResponse,
  SignalProcessRequestSchema,
  type SignalProcessResponse,
  StartProcessRequestSchema,
  type StartProcessResponse,
  WireHeader,
} from "@deckhand/wire";
import { type Context, Hono } from "hono";
import { type ChatScope, chatScope, normalizeChatId } from "./chat-scope.ts";
import type { ProcessManager, WaitOutcome } from "./process-manager.ts";
import { ProcessManagerError } from "./process-manager-error.ts";

export interface ProcessRouterOptions {
  /** Called with every unexpected error before its 500 is sent (to log it). */
  onUnexpectedError?: ErrorHandlingOptions["onUnexpectedError"];
}

function toHttpError(error: unknown): unknown {
  // A ProcessManagerError's code is a wire code already; the status map gives its status.
  if (ProcessManagerError.isInstance(error)) {
    return new HttpError(httpStatusOf(error.code), error.code, error.message, { cause: error });
  }
  return error;
}

interface RequestChat {
  /** The chat the request acts for, or null when it names none. */
  chatId: string | null;
  scope: ChatScope;
}

/**
 * Reads the chat headers strictly: a malformed chat id is refused rather than treated as "no
 * chat", which would widen what the request may see to every process.
 */
function requestChat(context: Context): RequestChat {
  const chatHeader = context.req.header(WireHeader.chatId);
  const ancestorsHeader = context.req.header(WireHeader.ancestorChatIds);
  if (chatHeader === undefined) {
    if (ancestorsHeader !== undefined) {
      throw new HttpError(
        400,
        "invalid_request",
        `${WireHeader.ancestorChatIds} needs ${WireHeader.chatId}; send the chat's own id too`,
      );
    }
    return { chatId: null, scope: null };
  }
  const chatId = ChatIdSchema.safeParse(chatHeader);
  if (!chatId.success) {
    throw new HttpError(
      400,
      "invalid_request",
      `${WireHeader.chatId} must be a chat UUID, got "${chatHeader.slice(0, 80)}"; send the chat's UUID or leave the header out`,
    );
  }
  let ancestors: string[] = [];
  if (ancestorsHeader !== undefined) {
    let value: unknown;
    try {
      value = JSON.parse(ancestorsHeader);
    } catch {
      value = undefined;
    }
    const parsed = AncestorChatIdsSchema.safeParse(value);
    if (!parsed.success) {
      throw new HttpError(
        400,
        "invalid_request",
        `${WireHeader.ancestorChatIds} must be a JSON array of chat UUIDs, e.g. ["${chatId.data}"]`,
      );
    }
    ancestors = parsed.data;
  }
  return {
    chatId: normalizeChatId(chatId.data),
    scope: chatScope(chatId.data, ancestors),
  };
}

type Handler = (context: Context) => Promise<Response> | Response;

/** Lets handlers call the manager directly while its errors still answer with the right status. */
function handle(handler: Handler): Handler {
  return async (context) => {
    try {
      return await handler(context);
    } catch (error) {
      throw toHttpError(error);
    }
  };
}

/**
 * The process API as a Hono app, to be mounted at `WirePath.processes`. Processes outlive the
 * requests that start or wait on them; a waiting request ends when its client goes away.
 */
export function createProcessRouter(
  manager: ProcessManager,
  options: ProcessRouterOptions = {},
): Hono {
  const app = new Hono();
  const errorOptions: ErrorHandlingOptions = {};
  if (options.onUnexpectedError !== undefined) {
    errorOptions.onUnexpectedError = options.onUnexpectedError;
  }
  installErrorHandling(app, errorOptions);
  app.onError((error, context) => errorResponse(context, toHttpError(error), errorOptions));

  app.post(
    "/start",
    handle(async (context) => {
      const { chatId } = requestChat(context);
      const { wait_ms: waitMs, ...request } = await parseJsonBody(
        context,
        StartProcessRequestSchema,
      );
      const options = { ...request, chat_id: chatId };
      if (waitMs === undefined) {
        const started = await manager.start(options);
        const body: StartProcessResponse = { id: started.id, started: true };
        return context.json(body);
      }
      // Start and wait in one request: a foreground command costs one round trip, not two.
      const { info, output } = await manager.startAndWait(options, {
        timeoutMs: waitMs,
        signal: context.req.raw.signal,
      });
      const body: StartProcessResponse = { id: info.id, started: true, output };
      return context.json(body);
    }),
  );

  app.get(
    "/list",
    handle((context) => {
      const { scope } = requestChat(context);
      const query = parseQuery(context, ListProcessesQuerySchema);
      const body: ListProcessesResponse = {
        processes: manager.list(scope, { limit: query.limit }),
      };
      return context.json(body);
    }),
  );

  app.get(
    "/:id/output",
    handle(async (context) => {
      const { scope } = requestChat(context);
      const query = parseQuery(context, ProcessOutputQuerySchema);
      const id = context.req.param("id")!;
      let outcome: WaitOutcome | null = null;
      // Only the exact value blocks, as in Coder's API: `wait=1` is a snapshot.
      if (query.wait === "true") {
        const wait = { timeoutMs: query.timeout_ms, signal: context.req.raw.signal };
        outcome =
          query.cursor === undefined
            ? await manager.waitForExit(id, scope, wait)
            : await manager.waitForOutput(id, scope, { ...wait, cursor: query.cursor });
      }
      const output = manager.output(id, scope, { cursor: query.cursor });
      const body: ProcessOutputResponse = {
        ...output,
        timed_out: outcome === "timed_out" && output.running,
      };
      return context.json(body);
    }),
  );

  app.post(
    "/:id/signal",
    handle(async (context) => {
      const { scope } = requestChat(context);
      const id = context.req.param("id")!;
      const request = await parseJsonBody(context, SignalProcessRequestSchema);
      manager.signal(id, scope, request.signal);
      const body: SignalProcessResponse = { id, signal: request.signal };
      return context.json(body);
    }),
  );

  return app;
}
