import { errnoCode, errorMessage } from "@deckhand/errors";
import type { ProvidersConfigResponse, ProvidersDiagnostic } from "@deckhand/wire";
import {
  type ConfigSnapshot,
  type ConfiguredProvider,
  configEtag,
  interpretProvidersConfig,
  readProvidersConfig,
  writeFileAtomically,
} from "./config-file.ts";
import { applyMergePatch } from "./merge-patch.ts";
import { ProvidersError } from "./providers-error.ts";
import type { ProvidersLogger } from "./providers-logger.ts";

export interface PatchConfigOptions {
  /** The `If-Match` header: the ETag the patch was made against, or `*`. */
  ifMatch?: string;
}

/**
 * `If-Match` uses the strong comparison (RFC 9110, 13.1.1): a weak tag (`W/"..."`) never
 * matches, since it only promises an equivalent file, not the bytes a patch was made against.
 */
function etagMatches(header: string, etag: string): boolean {
  const candidates = header.split(",").map((candidate) => candidate.trim());
  return candidates.includes("*") || candidates.includes(etag);
}

function diagnosticKey(diagnostic: ProvidersDiagnostic): string {
  return `${diagnostic.field}\u0000${diagnostic.message}`;
}

export function configResponse(config: ConfigSnapshot): ProvidersConfigResponse {
  return { config: config.document, etag: config.etag, diagnostics: config.diagnostics };
}

/** The error for an id the config does not know, naming those it does. */
export function unknownProvider(id: string, config: ConfigSnapshot): ProvidersError {
  const known = config.providers.map((candidate) => candidate.id).join(", ");
  return new ProvidersError("unknown_provider", `no provider "${id}"; known providers: ${known}`);
}

/**
 * The providers config file: read afresh at each use (its problems logged once each), and
 * changed by JSON merge patches, one at a time, atomically and checked against `If-Match`.
 */
export class ProvidersConfigStore {
  readonly #path: string;
  readonly #logger: ProvidersLogger;
  #writes: Promise<unknown> = Promise.resolve();
  #loggedDiagnostics = "";

  constructor(path: string, logger: ProvidersLogger) {
    this.#path = path;
    this.#logger = logger;
  }

  async read(): Promise<ConfigSnapshot> {
    const config = await readProvidersConfig(this.#path);
    const key = config.diagnostics.map(diagnosticKey).join("\n");
    if (key !== this.#loggedDiagnostics) {
      this.#loggedDiagnostics = key;
      for (const diagnostic of config.diagnostics) {
        this.#logger.warn("providers config problem", { ...diagnostic });
      }
    }
    return config;
  }

  /** The config as it is now, and the provider `id` of it. */
  async find(id: string): Promise<{ config: ConfigSnapshot; provider: ConfiguredProvider }> {
    const config = await this.read();
    const provider = config.providers.find((candidate) => candidate.id === id);
    if (!provider) throw unknownProvider(id, config);
    return { config, provider };
  }

  /** Applies a JSON merge patch to the file, atomically and one at a time. */
  patch(patch: unknown, options: PatchConfigOptions = {}): Promise<ProvidersConfigResponse> {
    return this.#serialised(() => this.#apply(patch, options));
  }

  /** Serialises writers: each patch reads the file only after the previous one wrote it. */
  #serialised<T>(operation: () => Promise<T>): Promise<T> {
    const next = this.#writes.then(operation, operation);
    this.#writes = next.catch(() => {});
    return next;
  }

  async #apply(patch: unknown, options: PatchConfigOptions): Promise<ProvidersConfigResponse> {
    if (typeof patch !== "object" || patch === null || Array.isArray(patch)) {
      throw new ProvidersError(
        "invalid_patch",
        'a providers config patch must be a JSON object (a JSON merge patch), e.g. {"providers": {"codex": {"enabled": false}}}',
      );
    }
    const current = await this.read();
    if (options.ifMatch !== undefined && !etagMatches(options.ifMatch, current.etag)) {
      throw new ProvidersError(
        "stale_config",
        `the providers config changed since ${options.ifMatch} (now ${current.etag}); read it again and reapply your change`,
      );
    }
    if (!current.patchable) {
      const problem = current.diagnostics.map((diagnostic) => diagnostic.message).join("; ");
      throw new ProvidersError(
        "unreadable_config",
        `${current.path} cannot be patched: ${problem}; fix or remove the file first`,
      );
    }
    const document = applyMergePatch(current.document, patch) as Record<string, unknown>;
    const text = `${JSON.stringify(document, null, 2)}\n`;
    // The file may already hold problems the user has not fixed; only new ones are refused.
    const before = new Set(current.diagnostics.map(diagnosticKey));
    const introduced = interpretProvidersConfig(current.path, text).diagnostics.filter(
      (diagnostic) => !before.has(diagnosticKey(diagnostic)),
    );
    if (introduced.length > 0) {
      throw new ProvidersError(
        "invalid_patch",
        introduced.map((diagnostic) => `${diagnostic.field}: ${diagnostic.message}`).join("; "),
      );
    }
    try {
      await writeFileAtomically(current.path, text);
    } catch (error) {
      const code = errnoCode(error) ?? errorMessage(error);
      throw new ProvidersError(
        "config_write_failed",
        `cannot write ${current.path}: ${code}; check the permissions and free space of its directory`,
        { cause: error },
      );
    }
    this.#logger.info("providers config changed", { file: current.path, etag: configEtag(text) });
    return configResponse(await this.read());
  }
}
