// Writes contract.json next to package.json. The parity test fails until this is re-run
// after a wire schema or constant changes.
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { renderContractDocument } from "../src/contract.ts";

const target = fileURLToPath(new URL("../contract.json", import.meta.url));
writeFileSync(target, renderContractDocument());
console.log(`wrote ${target}`);
