import {
  describeZodError,
  type ErrorHandlingOptions,
  HttpError,
  type HttpStatusOf,
  httpStatusOf,
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
import type { ProviderService } from "./provider-service.ts";
import { ProvidersError, type ProvidersErrorCode } from "./providers-error.ts";

/** The wire code each ProvidersError is answered with; its status comes from the status map. */
const wireCodeOf: Record<ProvidersErrorCode, ErrorCode> = {
  unknown_provider: "not_found",
  unknown_project: "not_found",
  provider_disabled: "conflict",
  provider_not_installed: "conflict",
  provider_unavailable: "conflict",
  stale_config: "conflict",
  invalid_patch: "invalid_request",
  unreadable_config: "conflict",
  config_write_failed: "internal",
};

/** An `If-Match` that names an old version is HTTP's own 412, the map's precise `conflict`. */
const PRECONDITION_FAILED: HttpStatusOf<"conflict"> = 412;

/** The HTTP status and wire code a ProvidersError is answered with. */
export function providersErrorStatus(error: ProvidersError): [HttpStatusOf<ErrorCode>, ErrorCode] {
  const code = wireCodeOf[error.code];
  return [error.code === "stale_config" ? PRECONDITION_FAILED : httpStatusOf(code), code];
}

function toHttpError(error: unknown): unknown {
  if (!ProvidersError.isInstance(error)) return error;
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
    const parsed = ProvidersConfigPatchSchema.safeParse(
      await readJsonBody(context, { mediaTypes: PATCH_TYPES }),
    );
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
