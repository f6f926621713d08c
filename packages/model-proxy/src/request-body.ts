// What of an agent's request body goes upstream. An agent that printed its environment, or read
// a file holding a key, sends that output back to the model as part of the conversation: the
// body is searched for every secret Deckhand knows (the job's own token and job id, the upstream
// keys, and every secret the process remembers: the workspace agent's token, code host tokens,
// URL passwords, the admin token) and each is replaced by the marker before it is forwarded.
// A compressed body is decoded first, since its secrets could not be found otherwise.
import { brotliDecompressSync, gunzipSync, inflateSync, zstdDecompressSync } from "node:zlib";
import { redactBytes } from "@deckhand/secrets";
import { codingsToUndo } from "./content-codings.ts";
import { ModelProxyError } from "./model-proxy-error.ts";

/** The most a compressed body may decode to; what an upstream would take is far less. */
export const MAX_DECODED_BODY_BYTES = 64 * 1024 * 1024;

type Decoder = (input: Uint8Array, options: { maxOutputLength: number }) => Buffer;

const decoders: Record<string, Decoder> = {
  gzip: gunzipSync,
  "x-gzip": gunzipSync,
  deflate: inflateSync,
  br: brotliDecompressSync,
  zstd: zstdDecompressSync,
};

/**
 * The body as it was before the agent compressed it (`Content-Encoding`, codings applied in the
 * order listed, so undone from the last), or the body itself when it was not compressed. An
 * unknown coding, a body that does not decode, or one that decodes past the bound is refused.
 */
function decodedBody(body: Uint8Array, contentEncoding: string | undefined): Uint8Array {
  let decoded = body;
  for (const coding of codingsToUndo(contentEncoding)) {
    const decode = decoders[coding];
    if (decode === undefined) {
      throw new ModelProxyError(
        "invalid_request",
        `the request body's Content-Encoding "${coding}" is not one the model-provider proxy reads; send the body uncompressed, or as gzip, deflate, br or zstd`,
      );
    }
    try {
      decoded = decode(decoded, { maxOutputLength: MAX_DECODED_BODY_BYTES });
    } catch (error) {
      if ((error as { code?: string }).code === "ERR_BUFFER_TOO_LARGE") {
        throw new ModelProxyError(
          "body_too_large",
          `the request body decodes to more than ${MAX_DECODED_BODY_BYTES} bytes; send a smaller request`,
        );
      }
      throw new ModelProxyError(
        "invalid_request",
        `the request body is not valid ${coding} data, as its Content-Encoding says; send it uncompressed`,
      );
    }
  }
  return decoded;
}

export interface UpstreamRequestBody {
  /** What to send upstream, uncompressed. */
  body: Uint8Array;
  /** Whether the agent's body was compressed (its Content-Encoding must not go upstream). */
  decoded: boolean;
  /** How many places held a secret. */
  redactions: number;
}

/**
 * The body to forward: decoded, with every occurrence of `secrets`, of every secret the process
 * remembers and of any scoped model token replaced by `[REDACTED]` (in the spellings JSON gives
 * them, see `redactBytes`). Works on the raw bytes: the body is neither parsed nor re-serialised,
 * and is not copied when it holds no secret.
 */
export function upstreamRequestBody(
  body: Uint8Array,
  contentEncoding: string | undefined,
  secrets: Iterable<string>,
): UpstreamRequestBody {
  const decoded = decodedBody(body, contentEncoding);
  const redacted = redactBytes(decoded, secrets);
  return { body: redacted.body, decoded: decoded !== body, redactions: redacted.count };
}
