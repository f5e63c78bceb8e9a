/**
 * Realistic computed outputs for the AWS/Kubernetes/command resources the program
 * registers, so tests exercise the same shapes a real deployment returns
 * (ids, ARNs, ECR URLs, IPs). Extend the tables when a component needs more.
 */
export const ACCOUNT = "123456789012";
export const REGION = "us-east-1";

type State = Record<string, unknown>;
type StateFn = (name: string, inputs: State) => State;

const arn = (service: string, resource: string) => `arn:aws:${service}:${REGION}:${ACCOUNT}:${resource}`;
const hex = (seed: string, len: number) => {
  let h = 2166136261;
  let out = "";
  while (out.length < len) {
    for (const c of seed + out.length) h = Math.imul(h ^ c.charCodeAt(0), 16777619) >>> 0;
    out += h.toString(16).padStart(8, "0");
  }
  return out.slice(0, len);
};

/** Outputs per resource type token. Unknown types get a generic id and ARN. */
/**
 * Stacks a test makes referable by name (`<org>/<project>/<stack>` -> their
 * StackReference state): e.g. the building stack a promoted stack reads.
 * Tests clear what they set.
 */
export const REFERENCED_STACKS = new Map<string, { name: string; outputs: State; secretOutputNames: string[] }>();

export const RESOURCE_STATE: Record<string, StateFn> = {
  "aws:ecr/repository:Repository": (name, i) => {
    const repoName = String(i.name ?? name);
    return {
      name: repoName,
      arn: arn("ecr", `repository/${repoName}`),
      repositoryUrl: `${ACCOUNT}.dkr.ecr.${REGION}.amazonaws.com/${repoName}`,
      registryId: ACCOUNT,
    };
  },
  "aws:ec2/instance:Instance": (name) => ({
    arn: arn("ec2", `instance/i-${hex(name, 17)}`),
    publicIp: "203.0.113.10",
    privateIp: "10.42.0.10",
    publicDns: "ec2-203-0-113-10.compute-1.amazonaws.com",
    instanceState: "running",
  }),
  "aws:iam/role:Role": (name, i) => ({
    arn: `arn:aws:iam::${ACCOUNT}:role/${String(i.name ?? name)}`,
    name: i.name ?? name,
  }),
  "aws:iam/instanceProfile:InstanceProfile": (name, i) => ({
    arn: `arn:aws:iam::${ACCOUNT}:instance-profile/${String(i.name ?? name)}`,
    name: i.name ?? name,
  }),
  "aws:iam/policy:Policy": (name, i) => ({ arn: `arn:aws:iam::${ACCOUNT}:policy/${String(i.name ?? name)}` }),
  "aws:ec2/securityGroup:SecurityGroup": (name) => ({ arn: arn("ec2", `security-group/sg-${hex(name, 17)}`) }),
  "aws:kms/key:Key": (name) => {
    const h = hex(name, 32);
    const keyId = `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
    return { keyId, arn: arn("kms", `key/${keyId}`) };
  },
  "aws:ec2/launchTemplate:LaunchTemplate": (name) => ({
    arn: arn("ec2", `launch-template/lt-${hex(name, 17)}`),
    latestVersion: 1,
    defaultVersion: 1,
  }),
  "aws:ec2/keyPair:KeyPair": (name, i) => ({ keyName: i.keyName ?? name, arn: arn("ec2", `key-pair/${name}`) }),
  "aws:s3/bucketV2:BucketV2": (name, i) => ({
    bucket: i.bucket ?? name,
    arn: `arn:aws:s3:::${String(i.bucket ?? name)}`,
  }),
  "aws:s3/bucket:Bucket": (name, i) => ({ bucket: i.bucket ?? name, arn: `arn:aws:s3:::${String(i.bucket ?? name)}` }),
  "tls:index/privateKey:PrivateKey": (name) => ({
    publicKeyOpenssh: `ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI${hex(name, 40)} ${name}`,
    privateKeyOpenssh: `-----BEGIN OPENSSH PRIVATE KEY-----\n${hex(name + "priv", 64)}\n-----END OPENSSH PRIVATE KEY-----\n`,
    privateKeyPem: `-----BEGIN PRIVATE KEY-----\n${hex(name + "pem", 64)}\n-----END PRIVATE KEY-----\n`,
  }),
  "tls:index/selfSignedCert:SelfSignedCert": (name) => ({
    certPem: `-----BEGIN CERTIFICATE-----\n${hex(name + "ca", 64)}\n-----END CERTIFICATE-----\n`,
  }),
  "tls:index/certRequest:CertRequest": (name) => ({
    certRequestPem: `-----BEGIN CERTIFICATE REQUEST-----\n${hex(name + "csr", 64)}\n-----END CERTIFICATE REQUEST-----\n`,
  }),
  "tls:index/locallySignedCert:LocallySignedCert": (name) => ({
    certPem: `-----BEGIN CERTIFICATE-----\n${hex(name + "crt", 64)}\n-----END CERTIFICATE-----\n`,
  }),
  // ElastiCache Serverless: one endpoint on 6379 (and the reader endpoint on 6380).
  "aws:elasticache/serverlessCache:ServerlessCache": (name, i) => {
    const id = `${String(i.name ?? name)}-${hex(name, 6)}`;
    return {
      arn: arn("elasticache", `serverlesscache:${String(i.name ?? name)}`),
      endpoints: [{ address: `${id}.serverless.use1.cache.amazonaws.com`, port: 6379 }],
      readerEndpoints: [{ address: `${id}.serverless.use1.cache.amazonaws.com`, port: 6380 }],
      status: "available",
    };
  },
  "aws:elasticache/user:User": (_name, i) => ({ arn: arn("elasticache", `user:${String(i.userId)}`) }),
  "aws:elasticache/userGroup:UserGroup": (_name, i) => ({
    arn: arn("elasticache", `usergroup:${String(i.userGroupId)}`),
  }),
  // Deterministic per name, of the requested length, alphanumeric like `special: false` produces.
  "random:index/randomPassword:RandomPassword": (name, i) => ({
    result: Array.from({ length: Number(i.length ?? 16) }, (_, k) => hex(`${name}-${Math.floor(k / 32)}`, 32)[k % 32])
      .map((c, k) => (k % 3 === 0 ? c.toUpperCase() : c))
      .join(""),
  }),
  "command:remote:Command": (name, i) => ({
    // Remote steps that produce an image print `RESULT image=<ref>`; echo a digest-pinned one. A step's
    // timer (scripts/remote/measure-step.sh) adds what the run took; other commands print it too, unread.
    stdout: `done\nRESULT image=${ACCOUNT}.dkr.ecr.${REGION}.amazonaws.com/${name}@sha256:${hex(name + JSON.stringify(i.triggers ?? []), 64)}\nRESULT step_seconds=60\nRESULT step_net_bytes=1048576\nRESULT step_measured_at=2026-01-02T03:04:05Z\n`,
    stderr: "",
  }),
  // awsx's VPC is a remote component: the mock stands in for everything it creates.
  "awsx:ec2:Vpc": (name, i) => {
    const azs = Number(i.numberOfAvailabilityZones ?? 3);
    const ids = (kind: string) => Array.from({ length: azs }, (_, k) => `subnet-${hex(`${name}-${kind}-${k}`, 17)}`);
    return {
      vpcId: `vpc-${hex(name, 17)}`,
      publicSubnetIds: ids("public"),
      privateSubnetIds: ids("private"),
      isolatedSubnetIds: [],
    };
  },
  "aws:ec2/eip:Eip": (name) => ({
    publicIp: `203.0.113.${(parseInt(hex(name, 2), 16) % 200) + 20}`,
    allocationId: `eipalloc-${hex(name, 17)}`,
  }),
  "command:remote:CopyToRemote": () => ({}),
  "aws:ec2transitgateway/instanceState:InstanceState": (_name, i) => ({ state: i.state }),
  // @pulumi/eks components are remote: the mock stands in for the control plane, OIDC provider and add-ons.
  "eks:index:Cluster": (name) => {
    const clusterName = `${name}-eksCluster-${hex(name, 7)}`;
    const issuer = `oidc.eks.${REGION}.amazonaws.com/id/${hex(name + "oidc", 32).toUpperCase()}`;
    return {
      eksCluster: {
        name: clusterName,
        arn: arn("eks", `cluster/${clusterName}`),
        endpoint: `https://${hex(name, 32).toUpperCase()}.gr7.${REGION}.eks.amazonaws.com`,
        // The security group EKS creates and puts on every managed node (and, through the VPC CNI, pod).
        vpcConfig: { clusterSecurityGroupId: `sg-${hex(name + "eks-cluster-sg", 17)}` },
      },
      kubeconfigJson: JSON.stringify({
        apiVersion: "v1",
        kind: "Config",
        clusters: [
          {
            name: clusterName,
            cluster: { server: `https://${hex(name, 32).toUpperCase()}.gr7.${REGION}.eks.amazonaws.com` },
          },
        ],
        contexts: [{ name: "aws", context: { cluster: clusterName, user: "aws" } }],
        "current-context": "aws",
        users: [
          {
            name: "aws",
            user: {
              exec: {
                apiVersion: "client.authentication.k8s.io/v1beta1",
                command: "aws",
                args: ["eks", "get-token", "--cluster-name", clusterName],
              },
            },
          },
        ],
      }),
      oidcIssuer: issuer,
      oidcProviderArn: `arn:aws:iam::${ACCOUNT}:oidc-provider/${issuer}`,
      clusterSecurityGroupId: `sg-${hex(name + "cluster", 17)}`,
    };
  },
  "eks:index:ManagedNodeGroup": (name) => ({
    nodeGroup: { nodeGroupName: name, arn: arn("eks", `nodegroup/${name}`) },
  }),
  // Another stack's outputs: one a test registered (REFERENCED_STACKS), else an existing-cluster stack's.
  "pulumi:pulumi:StackReference": (_name, i) =>
    REFERENCED_STACKS.get(String(i.name)) ?? {
      name: i.name,
      outputs: {
        kubeconfig: {
          apiVersion: "v1",
          clusters: [{ name: "shared", cluster: { server: "https://shared.example" } }],
          contexts: [{ name: "shared", context: { cluster: `arn:aws:eks:${REGION}:${ACCOUNT}:cluster/shared-gpu` } }],
          "current-context": "shared",
        },
        clusterName: "shared-gpu",
      },
      secretOutputNames: ["kubeconfig"],
    },
  "kubernetes:core/v1:Service": (name, i) => ({
    ...i,
    status: {
      loadBalancer: { ingress: [{ hostname: `k8s-${name}-${hex(name, 10)}.elb.${REGION}.amazonaws.com` }] },
    },
  }),
};

/** Results of provider function calls (data sources). */
export const CALL_RESULTS: Record<string, (args: State) => State> = {
  "aws:index/getCallerIdentity:getCallerIdentity": () => ({
    accountId: ACCOUNT,
    arn: `arn:aws:iam::${ACCOUNT}:user/ci`,
    userId: "AIDA",
  }),
  "aws:index/getRegion:getRegion": () => ({ name: REGION, region: REGION, id: REGION }),
  "aws:index/getPartition:getPartition": () => ({ partition: "aws", dnsSuffix: "amazonaws.com" }),
  "aws:index/getAvailabilityZones:getAvailabilityZones": () => ({
    names: [`${REGION}a`, `${REGION}b`, `${REGION}c`],
    zoneIds: ["use1-az1", "use1-az2", "use1-az4"],
  }),
  "aws:ec2/getAmi:getAmi": () => ({
    id: "ami-0a1b2c3d4e5f60718",
    imageId: "ami-0a1b2c3d4e5f60718",
    name: "Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 22.04) 20261101",
  }),
  "aws:ec2/getVpc:getVpc": (a) => ({ id: a.id, cidrBlock: "10.0.0.0/16", arn: arn("ec2", `vpc/${String(a.id)}`) }),
  // The AZ follows the id's last hex digit, so tests pick subnets in one or several AZs.
  "aws:ec2/getSubnet:getSubnet": (a) => ({
    id: a.id,
    vpcId: "vpc-0123456789abcdef0",
    availabilityZone: `${REGION}${"abc"[parseInt(String(a.id).slice(-1), 16) % 3] ?? "a"}`,
    mapPublicIpOnLaunch: true,
  }),
};

export function resourceState(type: string, name: string, inputs: State): { id: string; state: State } {
  const fn = RESOURCE_STATE[type];
  const extra = fn ? fn(name, inputs) : { arn: arn(type.split(":")[0] ?? "x", `${name}`) };
  return { id: `${name}-${hex(type + name, 8)}`, state: { ...inputs, ...extra } };
}
