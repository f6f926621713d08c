export { loadKubeConfig } from "./kube-config.ts";
export {
  type KubernetesPropagationPolicy,
  KubernetesPropagationPolicySchema,
  type KubernetesRuntimeConfig,
  KubernetesRuntimeConfigSchema,
  type KubernetesRuntimeSettings,
  type KubernetesToleration,
  KubernetesTolerationSchema,
  kubernetesRuntimeSettings,
  NODE_NAME_ENV,
  parseKubernetesRuntimeConfig,
} from "./kubernetes-config.ts";
export {
  KubernetesRuntimeError,
  type KubernetesRuntimeErrorCode,
} from "./kubernetes-runtime-error.ts";
export {
  type KubernetesStep,
  type KubernetesStepMount,
  type KubernetesStepResult,
  KubernetesStepRunner,
} from "./kubernetes-step-runner.ts";
export { type StepJobInput, stepJobManifest, stepSecretManifest } from "./step-job.ts";
