#!/usr/bin/env bash
# Step 1 on a CPU builder — host-ready: makes sure a vLLM-only stack's builder
# (infra/plan/cpuBuilder.ts) can run fetch and bake. host-ready.sh without its
# GPU checks: a vLLM build downloads a checkpoint and builds an image FROM the
# Triton-with-vLLM base, and nothing of it runs on a GPU. (A script of its own:
# host-ready.sh's bytes are part of every FT stack's step hashes.)
#
# usage: cpu-host-ready.sh <step-config-file>
#
# Step config (bash file of KEY='value' lines, rendered by the Pulumi program):
#   WORK_ROOT                   string  Work root for state, sources, models.       default '/opt/triton-ft'
#   AWS_REGION                  string  Region of the ECR registry.                  e.g. 'us-east-1'
#   ECR_REGISTRY                string  Registry host to log in to.                  e.g. '123456789012.dkr.ecr.us-east-1.amazonaws.com'
#   REQUIRED_FREE_GIB           int     Free disk needed on WORK_ROOT's filesystem.  e.g. '24'
#   CLOUD_INIT_TIMEOUT_SECONDS  int     Optional; how long to wait for cloud-init.   default '1800'
#
# Marker: $WORK_ROOT/state/host-ready.done (the step's id is host-ready on either
# kind of builder). Skipped when the config and the scripts are unchanged. ECR
# logins expire after 12 h, so the steps that pull or push log in again themselves.
#
# Prints: RESULT gpu_count=0, RESULT cpus=<online CPUs>
set -euo pipefail

# shellcheck source=scripts/remote/lib.sh
source "$(dirname "$(readlink -f "$0")")/lib.sh"

step_init host-ready "${1:-}"
require_vars AWS_REGION ECR_REGISTRY REQUIRED_FREE_GIB
require_int REQUIRED_FREE_GIB
CLOUD_INIT_TIMEOUT_SECONDS=${CLOUD_INIT_TIMEOUT_SECONDS:-1800}
require_int CLOUD_INIT_TIMEOUT_SECONDS

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

phase docker
# No GPU and no NVIDIA runtime checked: the bake's `docker build` runs no GPU
# code, and the image's GPU libraries are only loaded on the serving nodes.
require_cmd docker
docker info >/dev/null 2>&1 \
  || die "cannot talk to the Docker daemon as $(id -un); start docker or add the user to the docker group"
log "docker is up (CPU builder: no GPU needed)"

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

result gpu_count 0
result cpus "$(nproc)"
step_done
