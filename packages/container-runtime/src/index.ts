export type { ContainerCli } from "./container-cli.ts";
export {
  type ContainerImage,
  type EnsureImageOptions,
  ensureImage,
  inspectImage,
} from "./container-image.ts";
export { type ContainerMount, mountBreakingCharacter } from "./container-options.ts";
export {
  ContainerRuntimeError,
  type ContainerRuntimeErrorCode,
} from "./container-runtime-error.ts";
export {
  type ContainerRuntime,
  type ContainerRuntimeDetection,
  type ContainerRuntimeKind,
  type DetectContainerRuntimeOptions,
  detectContainerRuntime,
  noRuntimeError,
  type RuntimeProbe,
  requireContainerRuntime,
} from "./detect-container-runtime.ts";
export {
  type ContainerOutputChunk,
  type ContainerRunResult,
  type HostUser,
  type RunContainerOptions,
  runContainer,
} from "./run-container.ts";
