#!/usr/bin/env bats
# The builder's user-data fragment that installs the pinned SSH host key:
# rendered by the program (infra/cloud/hostKey.ts), run here under bash with
# stub aws/systemctl and the real ssh-keygen.

setup() {
  T=$BATS_TEST_TMPDIR
  REPO_ROOT=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
  mkdir -p "$T/bin" "$T/ssh"
  ssh-keygen -q -t ed25519 -N '' -C pinned -f "$T/pinned"
  # The AMI's own key, which must stop being offered.
  ssh-keygen -q -t ed25519 -N '' -C ami -f "$T/ssh/ssh_host_ed25519_key"
  cat >"$T/bin/aws" <<STUB
#!/usr/bin/env bash
printf '%s\n' "\$*" >>"$T/aws.log"
if [[ -e "$T/aws-fail-once" ]]; then rm -f "$T/aws-fail-once"; exit 255; fi
cat "$T/pinned"
STUB
  printf '#!/usr/bin/env bash\nprintf "%%s\\n" "$*" >>"%s/systemctl.log"\n' "$T" >"$T/bin/systemctl"
  printf '#!/usr/bin/env bash\nexit 0\n' >"$T/bin/sleep"
  chmod +x "$T/bin/"*
  (cd "$REPO_ROOT" && node_modules/.bin/tsx -e '
    import { hostKeyInstallScript } from "./infra/cloud/hostKey";
    process.stdout.write("#!/bin/bash\nset -euo pipefail\n" + hostKeyInstallScript("us-east-1", "/triton-ft-dev/builder/ssh-host-ed25519-key"));
  ') >"$T/userdata.sh"
}

@test "user data installs the pinned host key as sshd's only key and restarts sshd" {
  touch "$T/aws-fail-once"
  run env PATH="$T/bin:$PATH" TRITON_FT_SSH_DIR="$T/ssh" bash "$T/userdata.sh"
  [ "$status" -eq 0 ]
  # Retried the first (failed) read; always with decryption, of exactly our parameter.
  [ "$(grep -c -- '--with-decryption' "$T/aws.log")" -eq 2 ]
  grep -q -- "--name /triton-ft-dev/builder/ssh-host-ed25519-key" "$T/aws.log"
  cmp "$T/pinned" "$T/ssh/ssh_host_ed25519_key"
  [ "$(cut -d' ' -f1-2 "$T/ssh/ssh_host_ed25519_key.pub")" = "$(cut -d' ' -f1-2 "$T/pinned.pub")" ]
  [ "$(stat -c %a "$T/ssh/ssh_host_ed25519_key")" = 600 ]
  [ "$(cat "$T/ssh/sshd_config.d/50-triton-ft-hostkey.conf")" = "HostKey $T/ssh/ssh_host_ed25519_key" ]
  grep -q '^restart ssh$' "$T/systemctl.log"
  # The private key never reaches the logs cloud-init keeps.
  [[ $output != *"-----BEGIN"* ]]
}

@test "user data text holds no key material, only the parameter name" {
  run cat "$T/userdata.sh"
  [[ $output != *"-----BEGIN"* ]]
  [[ $output == *"/triton-ft-dev/builder/ssh-host-ed25519-key"* ]]
  shellcheck -s bash "$T/userdata.sh"
}

@test "user data fails loudly when the key cannot be read" {
  printf '#!/usr/bin/env bash\nexit 255\n' >"$T/bin/aws"
  run env PATH="$T/bin:$PATH" TRITON_FT_SSH_DIR="$T/ssh" bash "$T/userdata.sh"
  [ "$status" -ne 0 ]
  [[ $output == *"cannot read the SSH host key from SSM parameter"* ]]
  # The AMI's key is left in place, so the host stays reachable for debugging (and is refused by pulumi up).
  grep -q ami "$T/ssh/ssh_host_ed25519_key.pub"
}
