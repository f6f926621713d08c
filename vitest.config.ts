import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    projects: ["packages/*", "apps/*", "db", "e2e", "tooling/api-report"],
    // Two cores: keep the suite's parallelism predictable and leave room for the processes
    // the process-manager tests start. With `projects`, vitest 5 sizes its pool without this
    // root value (it ran one file at a time), so the test command also passes --maxWorkers=2.
    maxWorkers: 2,
    // The JSON report is what .ci/run turns into its one-line summary.
    reporters: ["default", ["json", { outputFile: "node_modules/.vitest/report.json" }]],
  },
});
