import {
  describeZodError,
  type ErrorHandlingOptions,
  HttpError,
  installErrorHandling,
  parseQuery,
  readJsonBody,
} from "@deckhand/http-kit";
import {
  type ErrorCode,
  ProviderIdSchema,
  ProvidersConfigPatchSchema,
  ProvidersRefreshRequestSchema,
  ProvidersSnapshotQuerySchema,
} from "@deckhand/wire";
import { Hono } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { ProviderService } from "./provider-service.ts";
import { ProvidersError, type ProvidersErrorCode } from "./providers-error.ts";

const errorStatus: Record<ProvidersErrorCode, [ContentfulStatusCode, ErrorCode]> = {
  unknown_provider: [404, "not_found"],
  unknown_project: [404, "not_found"],
  provider_disabled: [409, "conflict"],
  provider_not_installed: [409, "conflict"],
  provider_unavailable: [409, "conflict"],
  stale_config: [412, "conflict"],
  invalid_patch: [400, "invalid_request"],
  unreadable_config: [409, "conflict"],
  config_write_failed: [500, "internal"],
};

/** The HTTP status and wire code a ProvidersError is answered with. */
export function providersErrorStatus(error: ProvidersError): [ContentfulStatusCode, ErrorCode] {
  return errorStatus[error.code];
}

function toHttpError(error: unknown): unknown {
  if (!(error instanceof ProvidersError)) return error;
  const [status, code] = providersErrorStatus(error);
  return new HttpError(status, code, error.message, { cause: error });
}

async function call<T>(operation: () => Promise<T>): Promise<T> {
  try {
    return await operation();
  } catch (error) {
    throw toHttpError(error);
  }
}

const PATCH_TYPES = ["application/merge-patch+json", "application/json"];

/**
 * The providers API, relative to where it is mounted (the server mounts it under
 * `${WirePath.serverApi}/providers`): `GET /snapshot[?project_id=]`, `GET /config`, `PATCH /config`,
 * `POST /refresh` (an empty body is `{}`), `GET /:id/diagnostic`. Authentication is the mounting
 * app's job.
 */
export function createProvidersRouter(
  service: ProviderService,
  errorHandling: ErrorHandlingOptions = {},
): Hono {
  const app = new Hono();
  // Its own handler answers errors thrown here, so it is given the mounting app's options: an
  // unexpected error must reach the server log, not just become a silent 500.
  installErrorHandling(app, errorHandling);

  app.get("/snapshot", async (context) => {
    const projectId = parseQuery(context, ProvidersSnapshotQuerySchema).project_id;
    const snapshot = await call(() =>
      service.snapshot(projectId !== undefined ? { projectId } : {}),
    );
    return context.json(snapshot);
  });

  app.get("/config", async (context) => {
    const config = await call(() => service.getConfig());
    context.header("ETag", config.etag);
    return context.json(config);
  });

  app.patch("/config", async (context) => {
    const type = (context.req.header("Content-Type") ?? "").split(";")[0]!.trim().toLowerCase();
    if (!PATCH_TYPES.includes(type)) {
      throw new HttpError(
        415,
        "invalid_request",
        `send the patch as ${PATCH_TYPES.join(" or ")}, not ${type === "" ? "no Content-Type" : type}`,
      );
    }
    const parsed = ProvidersConfigPatchSchema.safeParse(await readJsonBody(context));
    if (!parsed.success) {
      throw new HttpError(
        400,
        "invalid_request",
        `a providers config patch is a JSON object (a JSON merge patch): ${describeZodError(parsed.error)}`,
        { cause: parsed.error },
      );
    }
    const ifMatch = context.req.header("If-Match");
    const config = await call(() =>
      service.patchConfig(parsed.data, ifMatch !== undefined ? { ifMatch } : {}),
    );
    context.header("ETag", config.etag);
    return context.json(config);
  });

  app.post("/refresh", async (context) => {
    const parsed = ProvidersRefreshRequestSchema.safeParse(
      await readJsonBody(context, { allowEmpty: true }),
    );
    if (!parsed.success) {
      throw new HttpError(400, "invalid_request", describeZodError(parsed.error), {
        cause: parsed.error,
      });
    }
    const { ids, force } = parsed.data;
    const snapshot = await call(() =>
      service.refresh({
        ...(ids !== undefined ? { ids } : {}),
        ...(force !== undefined ? { force } : {}),
      }),
    );
    return context.json(snapshot);
  });

  app.get("/:id/diagnostic", async (context) => {
    const id = context.req.param("id");
    if (!ProviderIdSchema.safeParse(id).success) {
      throw new HttpError(404, "not_found", `no provider "${id}"`);
    }
    const text = await call(() => service.diagnostic(id));
    return context.text(text, 200, { "Content-Type": "text/plain; charset=utf-8" });
  });

  return app;
}
