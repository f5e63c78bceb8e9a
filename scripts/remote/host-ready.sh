#!/usr/bin/env bash
# Step 1 — host-ready: makes sure the builder host can run the later steps.
#
# usage: host-ready.sh <step-config-file>
#
# Step config (bash file of KEY='value' lines, rendered by the Pulumi program):
#   WORK_ROOT                   string  Work root for state, sources, models.       default '/opt/triton-ft'
#   AWS_REGION                  string  Region of the ECR registry.                  e.g. 'us-east-1'
#   ECR_REGISTRY                string  Registry host to log in to.                  e.g. '123456789012.dkr.ecr.us-east-1.amazonaws.com'
#   REQUIRED_FREE_GIB           int     Free disk needed on WORK_ROOT's filesystem.  e.g. '180'
#   EXPECTED_GPU_NAME           string  Optional; name every GPU name must contain as a whole word (nvidia-smi name). e.g. 'A10G'
#   EXPECTED_GPU_COUNT          int     Optional; minimum number of GPUs.            e.g. '4'
#   CLOUD_INIT_TIMEOUT_SECONDS  int     Optional; how long to wait for cloud-init.   default '1800'
#
# Marker: $WORK_ROOT/state/host-ready.done. Skipped when the config and the
# scripts are unchanged. ECR logins expire after 12 h, so the steps that pull
# or push log in again themselves.
#
# Prints: RESULT gpu_count=<n>, RESULT gpu_name=<name>
set -euo pipefail

# shellcheck source=scripts/remote/lib.sh
source "$(dirname "$(readlink -f "$0")")/lib.sh"

step_init host-ready "${1:-}"
require_vars AWS_REGION ECR_REGISTRY REQUIRED_FREE_GIB
require_int REQUIRED_FREE_GIB
CLOUD_INIT_TIMEOUT_SECONDS=${CLOUD_INIT_TIMEOUT_SECONDS:-1800}
require_int CLOUD_INIT_TIMEOUT_SECONDS
if [[ -n ${EXPECTED_GPU_COUNT:-} ]]; then require_int EXPECTED_GPU_COUNT; fi

# shellcheck disable=SC2119 # no extra input files for this step
step_input_hash
step_skip_if_done

phase cloud-init
if command -v cloud-init >/dev/null 2>&1; then
  # Package installs from user data race with ours (apt/dpkg locks), so wait.
  ci_rc=0
  timeout "$CLOUD_INIT_TIMEOUT_SECONDS" cloud-init status --wait >/dev/null || ci_rc=$?
  case $ci_rc in
    0) log "cloud-init finished" ;;
    2) warn "cloud-init finished with recoverable errors (status 2); continuing" ;;
    124) die "cloud-init did not finish within ${CLOUD_INIT_TIMEOUT_SECONDS}s" ;;
    *) die "cloud-init reported an error (exit $ci_rc); see /var/log/cloud-init-output.log" ;;
  esac
else
  warn "cloud-init not installed; nothing to wait for"
fi

phase gpu
command -v nvidia-smi >/dev/null 2>&1 \
  || die "no GPU: nvidia-smi not found (use a GPU instance with the Deep Learning AMI)"
gpu_names=$(nvidia-smi --query-gpu=name --format=csv,noheader) \
  || die "no GPU: nvidia-smi failed (driver not loaded or no NVIDIA GPU attached)"
mapfile -t gpus < <(printf '%s\n' "$gpu_names" | sed '/^[[:space:]]*$/d')
gpu_count=${#gpus[@]}
((gpu_count > 0)) || die "no GPU: nvidia-smi lists no GPUs"
log "found $gpu_count GPU(s): $(printf '%s; ' "${gpus[@]}")"
if [[ -n ${EXPECTED_GPU_NAME:-} ]]; then
  for g in "${gpus[@]}"; do
    # Matched as a whole word (followed by nothing, a space or '-'): a plain
    # substring test would accept an L40S for 'NVIDIA L4'.
    [[ $g == *"$EXPECTED_GPU_NAME" || $g == *"$EXPECTED_GPU_NAME "* || $g == *"$EXPECTED_GPU_NAME-"* ]] \
      || die "wrong GPU model: found '$g', expected a name containing '$EXPECTED_GPU_NAME' as a whole word"
  done
fi
if [[ -n ${EXPECTED_GPU_COUNT:-} ]] && ((gpu_count < EXPECTED_GPU_COUNT)); then
  die "too few GPUs: found $gpu_count, need $EXPECTED_GPU_COUNT"
fi

phase docker
require_cmd docker
docker info >/dev/null 2>&1 \
  || die "cannot talk to the Docker daemon as $(id -un); start docker or add the user to the docker group"
runtimes=$(docker info --format '{{json .Runtimes}}')
[[ $runtimes == *nvidia* ]] \
  || die "Docker has no NVIDIA runtime (runtimes: $runtimes); install nvidia-container-toolkit and run 'nvidia-ctk runtime configure --runtime=docker'"
log "docker is up with the NVIDIA runtime"

phase disk
check_free_disk "$WORK_ROOT" "$REQUIRED_FREE_GIB"

phase git-lfs
require_cmd git
if git lfs version >/dev/null 2>&1; then
  log "git-lfs present: $(git lfs version)"
else
  sudo_cmd=()
  if ((EUID != 0)); then sudo_cmd=(sudo -n); fi
  if command -v apt-get >/dev/null 2>&1; then
    retry 3 10 "${sudo_cmd[@]}" apt-get update -q
    retry 3 10 "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q git-lfs
  elif command -v dnf >/dev/null 2>&1; then
    retry 3 10 "${sudo_cmd[@]}" dnf install -y git-lfs
  elif command -v yum >/dev/null 2>&1; then
    retry 3 10 "${sudo_cmd[@]}" yum install -y git-lfs
  else
    die "git-lfs missing and no apt-get/dnf/yum to install it"
  fi
  git lfs version >/dev/null 2>&1 || die "git-lfs still missing after installing it"
fi
git lfs install --skip-repo >/dev/null

phase ecr-login
require_cmd aws
ecr_login "$AWS_REGION" "$ECR_REGISTRY"

result gpu_count "$gpu_count"
result gpu_name "${gpus[0]}"
step_done
