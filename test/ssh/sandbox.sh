#!/usr/bin/env bash
# The SSH builder's host side, run by test/ssh/sshd.ts as
#   unshare --mount --propagation private bash sandbox.sh <dir> <port> <stubs>
# so every mount below exists only in this process's private mount namespace:
#   /opt      empty tmpfs: the builder's /opt/triton-ft lives here, never on the machine's /opt
#   /run      tmpfs holding sshd's privilege-separation directory
#   /etc/ssh  <dir>/etc-ssh: what the program's own user data writes there
#   ~user     <dir>/home: an empty home for the login user (its passwd home, which
#             sshd gives the session, and $HOME too where a caller set another)
# Then it runs the program's user data (systemctl and friends stubbed), and
# execs sshd on 127.0.0.1:<port> (same pid: the test stops it by that pid).
set -euo pipefail
dir=$1 port=$2 stubs=$3

mount -t tmpfs -o mode=0755 tmpfs /opt
mount -t tmpfs -o mode=0755 tmpfs /run
mkdir -p /run/sshd "$dir/etc-ssh/sshd_config.d"
mount --bind "$dir/etc-ssh" /etc/ssh
# A fresh home, as on a new builder: this machine's own dotfiles (PATH
# changes in ~/.bashrc, which bash reads for ssh commands) stay out.
# sshd starts the session in the user's passwd home, whatever this process's
# $HOME says (a run with HOME pointed elsewhere would otherwise leave the real
# dotfiles in the sessions).
mkdir -p "$dir/home"
login_home=$(getent passwd "$(id -un)" | cut -d: -f6)
mount --bind "$dir/home" "$login_home"
if [[ $HOME != "$login_home" && -d $HOME ]]; then mount --bind "$dir/home" "$HOME"; fi

# The program's user data, as cloud-init would run it (as root), with service
# managers stubbed: it writes the sshd drop-in (and, with host-key pinning, the
# host key) into /etc/ssh.
PATH=$stubs:$PATH STUB_LOG=$dir/stub-calls.log STUB_STATE=$dir/stub-state \
  bash "$dir/user-data.sh" >"$dir/user-data.log" 2>&1

host_keys=()
for k in /etc/ssh/ssh_host_*_key; do [[ -f $k ]] && host_keys+=("$k"); done
if ((${#host_keys[@]} == 0)); then
  # The user data installs no host key: the test server generates its own.
  ssh-keygen -q -t ed25519 -N '' -C triton-ft-test-builder -f /etc/ssh/ssh_host_ed25519_key
  host_keys=(/etc/ssh/ssh_host_ed25519_key)
fi
chmod 600 "${host_keys[@]}"
for k in "${host_keys[@]}"; do cat "$k.pub" 2>/dev/null || ssh-keygen -y -f "$k"; done >"$dir/host-keys.pub"

# Like Debian's stock sshd_config: the drop-ins first (first value wins), then
# the test server's own settings. SetEnv gives sessions the stub tools first on
# PATH; BASH_ENV lets a test steer the stubs (e.g. a failure mid-step).
{
  echo "Include /etc/ssh/sshd_config.d/*.conf"
  echo "ListenAddress 127.0.0.1"
  echo "Port $port"
  for k in "${host_keys[@]}"; do echo "HostKey $k"; done
  echo "PidFile none"
  echo "AuthorizedKeysFile $dir/authorized_keys"
  echo "PasswordAuthentication no"
  echo "KbdInteractiveAuthentication no"
  echo "UsePAM no"
  echo "StrictModes no"
  echo "PermitRootLogin prohibit-password"
  echo "AllowUsers $(id -un)"
  echo "Subsystem sftp internal-sftp"
  echo "LogLevel VERBOSE"
  echo "SetEnv PATH=$stubs:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin STUB_LOG=$dir/stub-calls.log STUB_STATE=$dir/stub-state BASH_ENV=$dir/control.env"
} >"$dir/sshd_config"
: >"$dir/control.env"
/usr/sbin/sshd -t -f "$dir/sshd_config"
touch "$dir/ready"
exec /usr/sbin/sshd -D -e -f "$dir/sshd_config"
