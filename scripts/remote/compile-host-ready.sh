#!/usr/bin/env bash
# compile-host-ready.sh <work-root> <required-free-gib> : makes sure the CPU
# compile host (infra/catalog/compileHosts.ts) can build triton_with_ft:
# cloud-init finished, Docker answers, git is there, and the work root's
# filesystem has the free disk the compile needs.
#
# Run by BuildPipeline on the compile host before the triton-with-ft step, not
# as a step of the build graph: the host holds no step output (the image it
# builds is in ECR, found there by its content tag), so nothing to mark done.
# No GPU and no NVIDIA runtime are checked: nvcc compiles for the `-DSM` archs
# without a GPU, and nothing here runs a container. The step itself logs in to
# ECR (its login must outlive the compile).
#
# Prints: RESULT free_gib=<free GiB on the work root's filesystem>
set -euo pipefail
STEP_NAME="compile-host-ready"
# shellcheck source=scripts/remote/lib.sh
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"

[[ $# -eq 2 ]] || die "usage: compile-host-ready.sh <work-root> <required-free-gib>"
work_root=$1 required_gib=$2
[[ $work_root == /* ]] || die "work root must be an absolute path, got '$work_root'"
[[ $required_gib =~ ^[0-9]+$ ]] || die "required free GiB must be a whole number, got '$required_gib'"

phase cloud-init
if command -v cloud-init >/dev/null 2>&1; then
  # The AMI's own first-boot installs race with Docker's start.
  ci_rc=0
  timeout 1800 cloud-init status --wait >/dev/null || ci_rc=$?
  case $ci_rc in
    0) log "cloud-init finished" ;;
    2) warn "cloud-init finished with recoverable errors (status 2); continuing" ;;
    124) die "cloud-init did not finish within 1800s" ;;
    *) die "cloud-init reported an error (exit $ci_rc); see /var/log/cloud-init-output.log" ;;
  esac
else
  warn "cloud-init not installed; nothing to wait for"
fi

phase docker
require_cmd docker
docker info >/dev/null 2>&1 \
  || die "cannot talk to the Docker daemon as $(id -un); start docker or add the user to the docker group"
log "docker is up"

phase tools
require_cmd git
require_cmd aws

phase disk
ensure_dir "$work_root"
check_free_disk "$work_root" "$required_gib"

result free_gib "$(free_gib "$work_root")"
