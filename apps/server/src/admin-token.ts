import { rememberSecrets } from "@deckhand/secrets";
import type { Logger } from "pino";
import type { ApiTokenStore } from "./api-tokens.ts";
import { ADMIN_TOKEN_ENV, type ServerConfig } from "./config.ts";

/**
 * The admin token generated at this start: on the first start beyond loopback without
 * ${ADMIN_TOKEN_ENV}, or with --reset-admin-token; null when none was (the flag without effect
 * is logged).
 */
export async function generateAdminToken(
  config: ServerConfig,
  apiTokens: ApiTokenStore,
  logger: Logger,
): Promise<string | null> {
  if (config.requireAuth && config.adminToken === null) {
    const generated = await apiTokens.ensureGeneratedAdminToken({
      replace: config.resetAdminToken,
    });
    rememberSecrets([generated]);
    return generated;
  }
  if (config.resetAdminToken) {
    logger.warn(
      config.adminToken === null
        ? "--reset-admin-token has no effect: on loopback without an admin token the API needs none"
        : `--reset-admin-token has no effect: ${ADMIN_TOKEN_ENV} is set, so no token is generated`,
    );
  }
  return null;
}

/** Prints the generated token to the terminal only, never the log: it is shown this once. */
export function announceAdminToken(token: string, announce?: (line: string) => void): void {
  (announce ?? ((line: string) => process.stderr.write(`${line}\n`)))(
    [
      "",
      `Generated admin token (shown only now; export it as ${ADMIN_TOKEN_ENV} for API clients):`,
      "",
      `  ${token}`,
      "",
      "Lost it? Restart with --reset-admin-token to revoke it and print a new one.",
      "",
    ].join("\n"),
  );
}
