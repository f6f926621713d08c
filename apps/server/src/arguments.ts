import { type FlagTable, parseFlags } from "@deckhand/command-line";
import {
  ADMIN_TOKEN_ENV,
  DATA_DIR_ENV,
  DATABASE_URL_ENV,
  LISTEN_ENV,
  LOG_LEVEL_ENV,
  PUBLIC_URL_ENV,
  SERVER_DEFAULT_LISTEN,
  type ServerFlags,
} from "./config.ts";
import { ServerError } from "./server-error.ts";

export const serverUsage = `Usage: deckhand up [options]

Starts the Deckhand server: the API, the model-provider proxy, an embedded database and a
workspace agent for the projects on this machine.

Flags win over the environment, which wins over <data-dir>/config.json.

Options:
  --listen HOST:PORT     address to listen on (default $${LISTEN_ENV}, else ${SERVER_DEFAULT_LISTEN});
                         on any other address than loopback the API needs
                         $${ADMIN_TOKEN_ENV}, or the admin token the server generates and
                         prints at its first start
  --public-url URL       the URL people open the server at, when it is not the listen
                         address (behind a reverse proxy, say); its host is one of the
                         server's names and its pages may use the API (default $${PUBLIC_URL_ENV})
  --data-dir DIR         database, workspaces and config.json (default $${DATA_DIR_ENV},
                         else ~/.deckhand)
  --database-url URL     use PostgreSQL instead of the embedded database (default $${DATABASE_URL_ENV})
  --no-agent             do not start the local workspace agent
  --log-level LEVEL      fatal|error|warn|info|debug|silent (default $${LOG_LEVEL_ENV}, else info)
  --reset-admin-token    revoke the generated admin token and print a new one
  -h, --help             show this help
`;

/** Each flag and the setting it sets; `resolveServerConfig` checks the values. */
const SERVER_FLAGS = {
  listen: { type: "string", setting: "listen" },
  "public-url": { type: "string", setting: "publicUrl" },
  "data-dir": { type: "string", setting: "dataDir" },
  "database-url": { type: "string", setting: "databaseUrl" },
  "no-agent": { type: "boolean", setting: "workspaceAgent", value: false },
  "log-level": { type: "string", setting: "logLevel" },
  "reset-admin-token": { type: "boolean", setting: "resetAdminToken", value: true },
} as const satisfies FlagTable<keyof ServerFlags>;

/** Turns argv into flags; unknown flags are a ServerError naming them. */
export function parseServerArguments(argv: string[]): ServerFlags & { help: boolean } {
  const { settings, help } = parseFlags(argv, SERVER_FLAGS, {
    usage: serverUsage,
    invalid: (message, cause) => new ServerError("invalid_config", message, { cause }),
  });
  return { ...(settings as ServerFlags), help };
}
