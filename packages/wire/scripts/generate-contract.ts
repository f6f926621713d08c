// Writes contract.json and openapi.json next to package.json, and the route index the client
// sends with (src/server-route-index.generated.json). The parity tests fail until this
// is re-run after a wire schema, route or constant changes.
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { renderContractDocument } from "../src/contract.ts";
import { renderOpenApiDocument, renderServerRouteIndex } from "../src/server-routes.ts";

const packageJson = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"));
for (const [name, text] of [
  ["contract.json", renderContractDocument()],
  ["openapi.json", renderOpenApiDocument(packageJson.version)],
  ["src/server-route-index.generated.json", renderServerRouteIndex()],
] as const) {
  const target = fileURLToPath(new URL(`../${name}`, import.meta.url));
  writeFileSync(target, text);
  console.log(`wrote ${target}`);
}
