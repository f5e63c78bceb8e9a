/**
 * The GPU build host's machine image and first boot: the AWS Deep Learning AMI
 * (driver, Docker and the NVIDIA container toolkit preinstalled) and the user
 * data that lets the build steps' secrets through sshd and installs the pinned
 * SSH host key. Pure.
 */
import { SECRET_ENV } from "../plan/stepGraph";
import { hostKeyInstallScript } from "./hostKey";

/** Name filter of the DLAMI: Ubuntu 22.04, open NVIDIA driver, Docker + NVIDIA runtime. */
export const DLAMI_NAME_FILTER = "Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 22.04)*";
export const BUILDER_SSH_USER = "ubuntu";

/**
 * The builder's gp3 root volume performance: above gp3's 3,000 IOPS / 125 MiB/s
 * baseline, because multi-GB layer writes and weight conversion are
 * disk-bound. The part above the baseline is billed monthly (infra/cost).
 */
export const BUILDER_VOLUME = { iops: 6000, throughputMiBps: 500 } as const;

/**
 * User data: the command provider hands `environment` values to sshd as SSH
 * "env" requests, which stock sshd drops unless AcceptEnv names them. Only the
 * secret variables are accepted, so the HF token reaches the fetch step without
 * ever being part of a command line.
 */
export function builderUserData(hostKey: { region: string; parameterName: string }): string {
  return [
    "#!/bin/bash",
    "set -euo pipefail",
    "cat > /etc/ssh/sshd_config.d/60-triton-ft.conf <<'CONF'",
    `AcceptEnv ${SECRET_ENV.join(" ")}`,
    "CONF",
    "systemctl reload ssh || systemctl reload sshd",
    // The pinned host key (infra/cloud/hostKey.ts): fetched from SSM, never part of the user data.
    hostKeyInstallScript(hostKey.region, hostKey.parameterName),
  ].join("\n");
}
