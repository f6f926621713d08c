// `deckhand executor-tokens create|list|revoke`: an admin's executor tokens, through the server's
// API and the typed server client, as `deckhand providers` manages providers.
import { parseArgs } from "node:util";
import { SERVER_DEFAULT_LISTEN } from "@deckhand/server-app";
import { createServerClient, ServerApiError } from "@deckhand/server-client";
import { type ExecutorToken, WireEnv } from "@deckhand/wire";
import { explainServerFailure, SERVER_URL_ENV, serverUrlOf } from "./server-command-options.ts";

export interface ExecutorTokensCommandIo {
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown };
  env: Record<string, string | undefined>;
  fetch: typeof fetch;
}

export const executorTokensUsage = `Usage: deckhand executor-tokens <command> [options]

Commands:
  create <name>   make an executor token and print it (the only time it is shown): give it to
                  "deckhand executor --server-url URL" as $${WireEnv.executorToken}
  list            the executor tokens: id, name, created, last used, revoked (never the tokens)
  revoke <id>     revoke a token: its executors are refused at their next call, and their jobs
                  go to other executors once their leases expire

Options:
  --server URL   the Deckhand server (default: $${SERVER_URL_ENV}, else http://${SERVER_DEFAULT_LISTEN})
  --json         print the server's JSON answer instead of text

The admin token, when the server needs one, is read from $${WireEnv.adminToken}. An executor
token reaches only the server's executor API; see docs/operations/executors.md.
`;

class UsageError extends Error {}

function parse(argv: string[], io: ExecutorTokensCommandIo) {
  let parsed: ReturnType<typeof parseOptions>;
  try {
    parsed = parseOptions(argv);
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  return {
    server: serverUrlOf(parsed.values.server, io.env, (message) => new UsageError(message)),
    json: parsed.values.json ?? false,
    positionals: parsed.positionals,
  };
}

function parseOptions(args: string[]) {
  return parseArgs({
    args,
    options: { server: { type: "string" }, json: { type: "boolean" } },
    allowPositionals: true,
    strict: true,
  });
}

function describeToken(token: ExecutorToken): string {
  const state = token.revoked_at !== null ? `revoked ${token.revoked_at}` : "live";
  const used = token.last_used_at === null ? "never used" : `last used ${token.last_used_at}`;
  return `${token.id}  ${token.name}  created ${token.created_at}  ${used}  ${state}\n`;
}

export async function runExecutorTokensCommand(
  argv: string[],
  io: ExecutorTokensCommandIo = {
    stdout: process.stdout,
    stderr: process.stderr,
    env: process.env,
    fetch: globalThis.fetch,
  },
): Promise<number> {
  const [command, ...rest] = argv;
  try {
    if (command === undefined || command === "help" || command === "--help" || command === "-h") {
      io.stdout.write(executorTokensUsage);
      return 0;
    }
    const options = parse(rest, io);
    const client = createServerClient({
      baseUrl: options.server,
      token: io.env[WireEnv.adminToken] ?? null,
      fetch: io.fetch,
    });
    const [argument, ...extra] = options.positionals;
    switch (command) {
      case "create": {
        if (argument === undefined || extra.length > 0) {
          throw new UsageError("create takes one argument: the token's name, e.g. builders");
        }
        const created = await client.createExecutorToken({ body: { name: argument } });
        io.stdout.write(
          options.json
            ? `${JSON.stringify(created, null, 2)}\n`
            : `${created.token}\n(executor token ${created.executor_token.id} "${created.executor_token.name}": shown this once; give it to deckhand executor as ${WireEnv.executorToken})\n`,
        );
        return 0;
      }
      case "list": {
        if (argument !== undefined) throw new UsageError("list takes no arguments");
        const listed = await client.listExecutorTokens();
        if (options.json) io.stdout.write(`${JSON.stringify(listed, null, 2)}\n`);
        else if (listed.executor_tokens.length === 0) io.stdout.write("no executor tokens\n");
        else for (const token of listed.executor_tokens) io.stdout.write(describeToken(token));
        return 0;
      }
      case "revoke": {
        if (argument === undefined || extra.length > 0) {
          throw new UsageError('revoke takes one argument: the token\'s id (see "list")');
        }
        await client.revokeExecutorToken({ params: { token_id: argument } });
        io.stdout.write(`revoked executor token ${argument}\n`);
        return 0;
      }
      default:
        throw new UsageError(`unknown command "${command}"`);
    }
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr.write(`deckhand executor-tokens: ${error.message}\n\n${executorTokensUsage}`);
      return 2;
    }
    if (error instanceof ServerApiError) {
      io.stderr.write(`deckhand executor-tokens ${command}: ${explainServerFailure(error)}\n`);
      return 1;
    }
    throw error;
  }
}
