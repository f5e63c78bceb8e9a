/**
 * The GPU build host: an EC2 instance of the serving GPU model running the AWS
 * Deep Learning AMI (driver, Docker and the NVIDIA container toolkit preinstalled),
 * reachable over SSH only from the configured CIDRs, allowed to push and pull
 * exactly the stack's two ECR repositories.
 */
import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";
import * as tls from "@pulumi/tls";
import type { ResolvedStack } from "../validate";
import { SECRET_ENV } from "../plan/steps";

/** Name filter of the DLAMI: Ubuntu 22.04, open NVIDIA driver, Docker + NVIDIA runtime. */
export const DLAMI_NAME_FILTER = "Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 22.04)*";
export const BUILDER_SSH_USER = "ubuntu";

export interface BuilderArgs {
  stack: ResolvedStack;
  namePrefix: string;
  vpcId: pulumi.Input<string>;
  subnetId: pulumi.Input<string>;
  /** ARNs of the two repositories the builder may push to and pull from. */
  repositoryArns: pulumi.Input<string>[];
  /** Private key matching `build.sshPublicKey` (secret `sshPrivateKey`); required with it. */
  providedPrivateKey?: pulumi.Output<string>;
  tags: Record<string, string>;
}

/** Pull and push on the named repositories only; the token call cannot be scoped. */
export const ECR_REPOSITORY_ACTIONS = [
  "ecr:BatchCheckLayerAvailability",
  "ecr:BatchGetImage",
  "ecr:GetDownloadUrlForLayer",
  "ecr:DescribeImages",
  "ecr:DescribeRepositories",
  "ecr:ListImages",
  "ecr:InitiateLayerUpload",
  "ecr:UploadLayerPart",
  "ecr:CompleteLayerUpload",
  "ecr:PutImage",
] as const;

export function builderEcrPolicy(repositoryArns: string[]): string {
  return JSON.stringify({
    Version: "2012-10-17",
    Statement: [
      { Sid: "EcrLogin", Effect: "Allow", Action: ["ecr:GetAuthorizationToken"], Resource: "*" },
      { Sid: "EcrPushPull", Effect: "Allow", Action: [...ECR_REPOSITORY_ACTIONS], Resource: repositoryArns },
    ],
  });
}

export const EC2_ASSUME_ROLE_POLICY = JSON.stringify({
  Version: "2012-10-17",
  Statement: [{ Effect: "Allow", Principal: { Service: "ec2.amazonaws.com" }, Action: "sts:AssumeRole" }],
});

/**
 * User data: the command provider hands `environment` values to sshd as SSH
 * "env" requests, which stock sshd drops unless AcceptEnv names them. Only the
 * secret variables are accepted, so the HF token reaches the fetch step without
 * ever being part of a command line.
 */
export function builderUserData(): string {
  return [
    "#!/bin/bash",
    "set -euo pipefail",
    "cat > /etc/ssh/sshd_config.d/60-triton-ft.conf <<'CONF'",
    `AcceptEnv ${SECRET_ENV.join(" ")}`,
    "CONF",
    "systemctl reload ssh || systemctl reload sshd",
    "",
  ].join("\n");
}

export class Builder extends pulumi.ComponentResource {
  readonly instance: aws.ec2.Instance;
  readonly publicIp: pulumi.Output<string>;
  readonly amiId: pulumi.Output<string>;
  /** Secret. The generated key, or the provided one. */
  readonly privateKey: pulumi.Output<string>;
  /** True when the key pair was generated here (and should be exported as a secret). */
  readonly generatedKey: boolean;
  readonly securityGroup: aws.ec2.SecurityGroup;
  readonly role: aws.iam.Role;

  constructor(name: string, args: BuilderArgs, opts?: pulumi.ComponentResourceOptions) {
    super("triton-ft:builder:Builder", name, {}, opts);
    const { stack, tags } = args;
    const build = stack.config.build;
    const parent = { parent: this };

    const pinnedAmi = build.builderAmiId;
    this.amiId = pinnedAmi
      ? pulumi.output(pinnedAmi)
      : aws.ec2
          .getAmiOutput(
            {
              owners: ["amazon"],
              mostRecent: true,
              filters: [
                { name: "name", values: [DLAMI_NAME_FILTER] },
                { name: "architecture", values: ["x86_64"] },
                { name: "state", values: ["available"] },
              ],
            },
            parent,
          )
          .apply((a) => a.id);

    if (build.sshPublicKey !== undefined && args.providedPrivateKey === undefined) {
      throw new Error(
        "triton-ft: build.sshPublicKey is set but the secret sshPrivateKey is not; pulumi up needs the private key to run the build steps: pulumi config set --secret triton-ft:sshPrivateKey < key",
      );
    }
    let publicKey: pulumi.Output<string>;
    if (build.sshPublicKey !== undefined && args.providedPrivateKey !== undefined) {
      publicKey = pulumi.output(build.sshPublicKey);
      this.privateKey = pulumi.secret(args.providedPrivateKey);
      this.generatedKey = false;
    } else {
      const key = new tls.PrivateKey(
        `${name}-ssh`,
        { algorithm: "ED25519" },
        { ...parent, additionalSecretOutputs: ["privateKeyOpenssh", "privateKeyPem"] },
      );
      publicKey = key.publicKeyOpenssh;
      this.privateKey = pulumi.secret(key.privateKeyOpenssh);
      this.generatedKey = true;
    }
    const keyPair = new aws.ec2.KeyPair(
      `${name}`,
      { keyNamePrefix: `${args.namePrefix}-builder-`, publicKey, tags },
      parent,
    );

    this.securityGroup = new aws.ec2.SecurityGroup(
      `${name}`,
      { vpcId: args.vpcId, description: "triton-ft builder: SSH from the allowed CIDRs only", tags },
      parent,
    );
    build.sshAllowedCidrs.forEach((cidr, i) => {
      new aws.vpc.SecurityGroupIngressRule(
        `${name}-ssh-${i}`,
        {
          securityGroupId: this.securityGroup.id,
          ipProtocol: "tcp",
          fromPort: 22,
          toPort: 22,
          cidrIpv4: cidr,
          description: `SSH from ${cidr}`,
          tags,
        },
        parent,
      );
    });
    // Outbound to the world: GitHub, Hugging Face, NGC and ECR over HTTPS.
    new aws.vpc.SecurityGroupEgressRule(
      `${name}-egress`,
      {
        securityGroupId: this.securityGroup.id,
        ipProtocol: "-1",
        cidrIpv4: "0.0.0.0/0",
        description: "outbound downloads and ECR pushes",
        tags,
      },
      parent,
    );

    this.role = new aws.iam.Role(
      `${name}`,
      { namePrefix: `${args.namePrefix}-builder-`.slice(0, 38), assumeRolePolicy: EC2_ASSUME_ROLE_POLICY, tags },
      parent,
    );
    new aws.iam.RolePolicy(
      `${name}-ecr`,
      { role: this.role.id, policy: pulumi.all(args.repositoryArns).apply((arns) => builderEcrPolicy(arns)) },
      parent,
    );
    new aws.iam.RolePolicyAttachment(
      `${name}-ssm`,
      { role: this.role.name, policyArn: aws.iam.ManagedPolicy.AmazonSSMManagedInstanceCore },
      parent,
    );
    const profile = new aws.iam.InstanceProfile(
      `${name}`,
      { namePrefix: `${args.namePrefix}-builder-`.slice(0, 38), role: this.role.name, tags },
      parent,
    );

    this.instance = new aws.ec2.Instance(
      `${name}`,
      {
        ami: this.amiId,
        instanceType: stack.builderInstance.type,
        subnetId: args.subnetId,
        associatePublicIpAddress: true,
        vpcSecurityGroupIds: [this.securityGroup.id],
        keyName: keyPair.keyName,
        iamInstanceProfile: profile.name,
        userData: builderUserData(),
        metadataOptions: { httpTokens: "required", httpEndpoint: "enabled", httpPutResponseHopLimit: 1 },
        rootBlockDevice: {
          volumeType: "gp3",
          volumeSize: stack.builderDiskGiB,
          encrypted: true,
          deleteOnTermination: true,
          // Above gp3's 3000 IOPS / 125 MiB/s baseline: multi-GB layer writes and
          // weight conversion are disk-bound.
          iops: 6000,
          throughput: 500,
        },
        tags: { ...tags, Name: `${args.namePrefix}-builder` },
        volumeTags: tags,
      },
      {
        ...parent,
        // An unpinned AMI lookup moves when AWS publishes a new DLAMI; replacing
        // the builder then would throw away every finished step. Pin
        // build.builderAmiId (or `pulumi up --replace`) to move deliberately.
        ignoreChanges: pinnedAmi ? [] : ["ami"],
      },
    );
    // A stable address: a stopped and restarted builder (build.stopBuilderWhenDone)
    // would otherwise come back on a new public IP the SSH connection does not know.
    const eip = new aws.ec2.Eip(`${name}`, { domain: "vpc", instance: this.instance.id, tags }, parent);
    this.publicIp = eip.publicIp;
    this.registerOutputs({ instanceId: this.instance.id, publicIp: this.publicIp, amiId: this.amiId });
  }
}
