// Writes batch-spec.schema.json next to package.json. A test fails until this is re-run after
// the zod model changes: `pnpm --filter @deckhand/batch-spec generate`.
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { renderBatchSpecJsonSchema } from "../src/json-schema.ts";

const target = fileURLToPath(new URL("../batch-spec.schema.json", import.meta.url));
writeFileSync(target, renderBatchSpecJsonSchema());
// The repository's formatter owns the layout of checked-in JSON (`biome ci` checks it); the
// staleness test compares content, not layout. pnpm puts biome on PATH for package scripts.
const formatted = spawnSync("biome", ["format", "--write", target], { stdio: "ignore" });
if (formatted.status !== 0) {
  console.warn("could not run biome; run `pnpm format` before committing the schema");
}
console.log(`wrote ${target}`);
