/**
 * The builder's SSH host key, pinned. Without a pinned key the command
 * provider accepts whatever key the host presents, so every build step
 * (which carries the Hugging Face token and pushes images) could be talking
 * to someone else. The Pulumi program generates an ED25519 host key
 * (@pulumi/tls), stores the private half as an SSM SecureString parameter
 * (never in user data, which anyone with ec2:DescribeInstanceAttribute can
 * read), lets only the builder's role read that one parameter, and gives the
 * public half to every SSH connection (`hostKey`). On first boot the user
 * data fetches the key, installs it as sshd's only host key and restarts sshd.
 *
 * Pure: text and JSON for the components.
 */

/** SSM parameter holding the builder's private host key. */
export function hostKeyParameterName(namePrefix: string): string {
  return `/${namePrefix}/builder/ssh-host-ed25519-key`;
}

// Until the user data has installed the pinned key (a minute or two after
// boot), sshd answers with the AMI's own key; the command provider counts each
// refusal as a dial error and retries with backoff (the program's
// dialErrorLimit). A wrong key is still refused once the attempts run out.

/** IAM statement: read (and decrypt, with the AWS-managed aws/ssm key) exactly the host-key parameter. */
export function hostKeyReadStatement(parameterArn: string): Record<string, unknown> {
  return { Sid: "ReadHostKey", Effect: "Allow", Action: ["ssm:GetParameter"], Resource: parameterArn };
}

/**
 * Bash for the builder's user data. `TRITON_FT_SSH_DIR` exists for the tests;
 * on the builder it is /etc/ssh. The key never reaches stdout or stderr (both
 * go to /var/log/cloud-init-output.log).
 */
export function hostKeyInstallScript(region: string, parameterName: string): string {
  return `install_host_key() {
  local dir=\${TRITON_FT_SSH_DIR:-/etc/ssh} key="" tries=0
  # The instance profile can take a few seconds to become usable after boot.
  until key=$(aws ssm get-parameter --region '${region}' --name '${parameterName}' --with-decryption \\
    --query Parameter.Value --output text 2>/dev/null) && [[ $key == *"PRIVATE KEY"* ]]; do
    tries=$((tries + 1))
    if ((tries >= 60)); then
      echo "triton-ft: cannot read the SSH host key from SSM parameter ${parameterName}" >&2
      return 1
    fi
    sleep 5
  done
  (
    umask 077
    printf '%s\\n' "$key" >"$dir/ssh_host_ed25519_key.tmp"
  )
  ssh-keygen -y -f "$dir/ssh_host_ed25519_key.tmp" >"$dir/ssh_host_ed25519_key.pub.tmp"
  chmod 0600 "$dir/ssh_host_ed25519_key.tmp"
  chmod 0644 "$dir/ssh_host_ed25519_key.pub.tmp"
  mv -f "$dir/ssh_host_ed25519_key.tmp" "$dir/ssh_host_ed25519_key"
  mv -f "$dir/ssh_host_ed25519_key.pub.tmp" "$dir/ssh_host_ed25519_key.pub"
  # Only the pinned key: with a HostKey line sshd offers no default keys.
  mkdir -p "$dir/sshd_config.d"
  printf 'HostKey %s\\n' "$dir/ssh_host_ed25519_key" >"$dir/sshd_config.d/50-triton-ft-hostkey.conf"
  systemctl restart ssh || systemctl restart sshd
}
install_host_key
`;
}
