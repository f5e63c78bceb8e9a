/**
 * The GPU build host: an EC2 instance of the serving GPU model running the AWS
 * Deep Learning AMI (driver, Docker and the NVIDIA container toolkit preinstalled),
 * or, for a stack whose every model is served by vLLM, a CPU instance the plan
 * picks (plan/cpuBuilder.ts) booting the same AMI with its driver idle, as the
 * compile host does;
 * reachable over SSH only from the configured CIDRs, allowed to push and pull
 * exactly the stack's two ECR repositories.
 */
import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";
import * as tls from "@pulumi/tls";
import { BUILDER_VOLUME, DLAMI_NAME_FILTER, builderUserData } from "../cloud/builderHost";
import { hostKeyParameterName, hostKeyReadStatement } from "../cloud/hostKey";
import { EC2_ASSUME_ROLE_POLICY, builderEcrPolicy } from "../cloud/iam";

export interface BuilderArgs {
  /** EC2 instance type: a GPU type (catalog-checked: the serving GPU model, enough RAM to convert), or a vLLM-only stack's CPU type (catalog/cpuBuilders.ts). */
  readonly instanceType: string;
  /** Root volume in GiB (the plan's build.builderDiskGiB). */
  readonly diskGiB: number;
  /**
   * Pinned AMI (build.builderAmiId): a later DLAMI then changes nothing.
   * @default the newest DLAMI matching DLAMI_NAME_FILTER
   */
  readonly amiId?: string;
  /** CIDRs allowed to SSH in (validated: never empty, never 0.0.0.0/0). */
  readonly sshAllowedCidrs: readonly string[];
  /**
   * A provided key pair (build.sshPublicKey + the sshPrivateKey secret).
   * @default a key pair generated with @pulumi/tls
   */
  readonly sshKey?: { publicKey: string; privateKey: pulumi.Output<string> };
  /** `<project>-<stack>`: prefix of the key pair, role and instance names. */
  readonly namePrefix: string;
  /** VPC the builder's security group belongs to. */
  readonly vpcId: pulumi.Input<string>;
  /** A public subnet of that VPC. */
  readonly subnetId: pulumi.Input<string>;
  /** ARNs of the stack's repositories the builder may push to and pull from (every model's server repository among them). */
  readonly repositoryArns: pulumi.Input<string>[];
  /** AWS tags for every resource of the builder (the stack's: a builder may serve several models). */
  readonly tags: Record<string, string>;
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
  /**
   * The builder's SSH host key (OpenSSH public key line), generated here and
   * installed by the user data: every connection pins it (`hostKey`).
   */
  readonly hostPublicKey: pulumi.Output<string>;

  constructor(name: string, args: BuilderArgs, opts?: pulumi.ComponentResourceOptions) {
    super("triton-ft:builder:Builder", name, {}, opts);
    this.amiId = this.ami(args.amiId);
    const ssh = this.loginKey(name, args);
    this.privateKey = ssh.privateKey;
    this.generatedKey = ssh.generated;
    this.securityGroup = this.firewall(name, args);
    this.role = this.instanceRole(name, args);
    const hostKey = this.hostKey(name, args, this.role);
    this.hostPublicKey = hostKey.publicKey;
    const profile = new aws.iam.InstanceProfile(
      `${name}`,
      { namePrefix: `${args.namePrefix}-builder-`.slice(0, 38), role: this.role.name, tags: args.tags },
      { parent: this },
    );
    this.instance = this.launch(name, args, ssh.keyName, profile, hostKey.readable);
    // A stable address: a stopped and restarted builder (build.stopBuilderWhenDone)
    // would otherwise come back on a new public IP the SSH connection does not know.
    const eip = new aws.ec2.Eip(
      `${name}`,
      { domain: "vpc", instance: this.instance.id, tags: args.tags },
      { parent: this },
    );
    this.publicIp = eip.publicIp;
    this.registerOutputs({ instanceId: this.instance.id, publicIp: this.publicIp, amiId: this.amiId });
  }

  /** The pinned AMI, or the newest DLAMI matching DLAMI_NAME_FILTER. */
  private ami(pinned: string | undefined): pulumi.Output<string> {
    if (pinned) return pulumi.output(pinned);
    return aws.ec2
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
        { parent: this },
      )
      .apply((a) => a.id);
  }

  /** The SSH login key (provided, or generated here) and its EC2 key pair. */
  private loginKey(
    name: string,
    args: BuilderArgs,
  ): { privateKey: pulumi.Output<string>; generated: boolean; keyName: pulumi.Output<string> } {
    const parent = { parent: this };
    let publicKey: pulumi.Output<string>;
    let privateKey: pulumi.Output<string>;
    if (args.sshKey) {
      publicKey = pulumi.output(args.sshKey.publicKey);
      privateKey = pulumi.secret(args.sshKey.privateKey);
    } else {
      const key = new tls.PrivateKey(
        `${name}-ssh`,
        { algorithm: "ED25519" },
        { ...parent, additionalSecretOutputs: ["privateKeyOpenssh", "privateKeyPem"] },
      );
      publicKey = key.publicKeyOpenssh;
      privateKey = pulumi.secret(key.privateKeyOpenssh);
    }
    const keyPair = new aws.ec2.KeyPair(
      `${name}`,
      { keyNamePrefix: `${args.namePrefix}-builder-`, publicKey, tags: args.tags },
      parent,
    );
    return { privateKey, generated: !args.sshKey, keyName: keyPair.keyName };
  }

  /** SSH in from the allowed CIDRs only; out to the world (GitHub, Hugging Face, NGC and ECR over HTTPS). */
  private firewall(name: string, args: BuilderArgs): aws.ec2.SecurityGroup {
    const { tags } = args;
    const parent = { parent: this };
    const group = new aws.ec2.SecurityGroup(
      `${name}`,
      { vpcId: args.vpcId, description: "triton-ft builder: SSH from the allowed CIDRs only", tags },
      parent,
    );
    args.sshAllowedCidrs.forEach((cidr, i) => {
      new aws.vpc.SecurityGroupIngressRule(
        `${name}-ssh-${i}`,
        {
          securityGroupId: group.id,
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
    new aws.vpc.SecurityGroupEgressRule(
      `${name}-egress`,
      {
        securityGroupId: group.id,
        ipProtocol: "-1",
        cidrIpv4: "0.0.0.0/0",
        description: "outbound downloads and ECR pushes",
        tags,
      },
      parent,
    );
    return group;
  }

  /** The instance role: push and pull the stack's repositories, and SSM. */
  private instanceRole(name: string, args: BuilderArgs): aws.iam.Role {
    const parent = { parent: this };
    const role = new aws.iam.Role(
      `${name}`,
      {
        namePrefix: `${args.namePrefix}-builder-`.slice(0, 38),
        assumeRolePolicy: EC2_ASSUME_ROLE_POLICY,
        tags: args.tags,
      },
      parent,
    );
    new aws.iam.RolePolicy(
      `${name}-ecr`,
      { role: role.id, policy: pulumi.all(args.repositoryArns).apply((arns) => builderEcrPolicy(arns)) },
      parent,
    );
    new aws.iam.RolePolicyAttachment(
      `${name}-ssm`,
      { role: role.name, policyArn: aws.iam.ManagedPolicy.AmazonSSMManagedInstanceCore },
      parent,
    );
    return role;
  }

  /**
   * The SSH host key: generated here, the private half stored as an SSM
   * SecureString that only the builder's role may read, fetched by the user
   * data at first boot. Never in user data (readable with
   * ec2:DescribeInstanceAttribute). `readable` is what the first boot needs.
   */
  private hostKey(
    name: string,
    args: BuilderArgs,
    role: aws.iam.Role,
  ): { publicKey: pulumi.Output<string>; readable: pulumi.Resource[] } {
    const parent = { parent: this };
    const key = new tls.PrivateKey(
      `${name}-host-key`,
      { algorithm: "ED25519" },
      { ...parent, additionalSecretOutputs: ["privateKeyOpenssh", "privateKeyPem"] },
    );
    const parameter = new aws.ssm.Parameter(
      `${name}-host-key`,
      {
        name: hostKeyParameterName(args.namePrefix),
        type: "SecureString",
        value: pulumi.secret(key.privateKeyOpenssh),
        description: "triton-ft builder: private SSH host key (the program pins its public half)",
        tags: args.tags,
      },
      parent,
    );
    const read = new aws.iam.RolePolicy(
      `${name}-host-key`,
      {
        role: role.id,
        policy: parameter.arn.apply((arn) =>
          JSON.stringify({ Version: "2012-10-17", Statement: [hostKeyReadStatement(arn)] }),
        ),
      },
      parent,
    );
    return { publicKey: key.publicKeyOpenssh, readable: [parameter, read] };
  }

  /** The instance: IMDSv2 only, an encrypted gp3 root volume sized by the plan. */
  private launch(
    name: string,
    args: BuilderArgs,
    keyName: pulumi.Output<string>,
    profile: aws.iam.InstanceProfile,
    hostKeyReadable: pulumi.Resource[],
  ): aws.ec2.Instance {
    const region = aws.getRegionOutput({}, { parent: this }).region;
    return new aws.ec2.Instance(
      `${name}`,
      {
        ami: this.amiId,
        instanceType: args.instanceType,
        subnetId: args.subnetId,
        associatePublicIpAddress: true,
        vpcSecurityGroupIds: [this.securityGroup.id],
        keyName,
        iamInstanceProfile: profile.name,
        userData: region.apply((r) =>
          builderUserData({ region: r, parameterName: hostKeyParameterName(args.namePrefix) }),
        ),
        metadataOptions: { httpTokens: "required", httpEndpoint: "enabled", httpPutResponseHopLimit: 1 },
        rootBlockDevice: {
          volumeType: "gp3",
          volumeSize: args.diskGiB,
          encrypted: true,
          deleteOnTermination: true,
          // Above gp3's baseline (cloud/builderHost.ts BUILDER_VOLUME): the build is disk-bound.
          iops: BUILDER_VOLUME.iops,
          throughput: BUILDER_VOLUME.throughputMiBps,
        },
        tags: { ...args.tags, Name: `${args.namePrefix}-builder` },
        volumeTags: args.tags,
      },
      {
        parent: this,
        // The first boot reads the host key: the parameter and the permission come first.
        dependsOn: hostKeyReadable,
        // An unpinned AMI lookup moves when AWS publishes a new DLAMI; replacing
        // the builder then would throw away every finished step. Pin
        // build.builderAmiId (or `pulumi up --replace`) to move deliberately.
        ignoreChanges: args.amiId ? [] : ["ami"],
      },
    );
  }
}
