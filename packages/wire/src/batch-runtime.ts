/**
 * How steps run: a container when the step names one and a runtime works, or always/never; or
 * `kubernetes`: every step that names an image as a Kubernetes Job (config.json's `kubernetes`).
 * Apart from the schema built from it, so the CLI checks `--runtime` without building schemas.
 */
export const batchRuntimeChoices = ["auto", "local", "container", "kubernetes"] as const;
