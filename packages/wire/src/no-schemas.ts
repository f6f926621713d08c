// `@deckhand/wire/no-schemas`: the part of the contract that builds no zod schema (names,
// paths, the error base, the routes as a client sends them). A client imports it to send its
// first request at once and loads the package's schemas (`@deckhand/wire`) to check the answer,
// while the server works; every export here is also exported by the package's index.
export { batchRuntimeChoices } from "./batch-runtime.ts";
export {
  AGENT_DEFAULT_LISTEN,
  ProcessLimits,
  WEB_CSP_NONCE_PLACEHOLDER,
  WireEnv,
  WireHeader,
  WirePath,
  WireSubprotocol,
} from "./constants.ts";
export { DeckhandError } from "./deckhand-error.ts";
export { serverPath } from "./server-path.ts";
export { type ServerRouteIndexEntry, serverRouteIndex } from "./server-route-index.ts";
