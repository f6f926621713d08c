import { config } from "zod";

// zod compiles object schemas with `new Function` when it may, and finds out by trying: under the
// page's Content Security Policy (no 'unsafe-eval') the try is refused and reported as a
// violation. Told up front, it never tries. Imported first, before any schema is used.
config({ jitless: true });
