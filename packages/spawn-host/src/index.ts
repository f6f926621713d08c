export {
  type HostedExecOptions,
  type HostedExecResult,
  SPAWN_HOST_EXITED,
  SpawnHost,
  type SpawnHostOptions,
  sharedSpawnHost,
} from "./spawn-host.ts";
