export {
  type HostedExecOptions,
  type HostedExecResult,
  type HostedSpawnOptions,
  SPAWN_HOST_EXITED,
  SpawnHost,
  type SpawnHostOptions,
  sharedSpawnHost,
} from "./spawn-host.ts";
