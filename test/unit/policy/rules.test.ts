/**
 * Each rule against a crafted violation it must report, and the compliant
 * variant it must accept. A rule without a failing case here is a defect: the
 * last test checks that every rule of the pack has one.
 */
import { describe, expect, it } from "vitest";
import { allRules, type ResourceView } from "../../../policy/rules";
import type { Rule } from "../../../policy/rules/types";

type Props = Record<string, unknown>;
const r = (type: string, name: string, props: Props): ResourceView => ({ type, name, props });
const DIGEST = `123456789012.dkr.ecr.us-east-1.amazonaws.com/triton-ft-dev/server@sha256:${"ab".repeat(32)}`;

/** A Deployment that follows the whole Kubernetes baseline; cases break one thing at a time. */
function deployment(edit: (pod: Props, container: Props, meta: Props) => void = () => undefined): ResourceView {
  const container: Props = {
    name: "tritonserver",
    image: DIGEST,
    resources: { limits: { memory: "8Gi" } },
    securityContext: {
      runAsNonRoot: true,
      runAsUser: 1000,
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ["ALL"] },
    },
  };
  const pod: Props = {
    automountServiceAccountToken: false,
    securityContext: { runAsNonRoot: true, seccompProfile: { type: "RuntimeDefault" } },
    containers: [container],
  };
  const meta: Props = { name: "triton", namespace: "triton" };
  edit(pod, container, meta);
  return r("kubernetes:apps/v1:Deployment", "triton-deployment", { metadata: meta, spec: { template: { spec: pod } } });
}

const denyAll = (ns = "triton", spec: Props = {}): ResourceView =>
  r("kubernetes:networking.k8s.io/v1:NetworkPolicy", `${ns}-default-deny`, {
    metadata: { name: "default-deny", namespace: ns },
    spec: { podSelector: {}, policyTypes: ["Ingress", "Egress"], ...spec },
  });

const service = (annotations: Props, type = "LoadBalancer"): ResourceView =>
  r("kubernetes:core/v1:Service", "triton-service", {
    metadata: { name: "triton", namespace: "triton", annotations },
    spec: {
      type,
      ports: [
        { name: "http", port: 8000 },
        { name: "grpc", port: 8001 },
      ],
    },
  });

const iamPolicy = (statement: Props): ResourceView =>
  r("aws:iam/policy:Policy", "p", { policy: JSON.stringify({ Version: "2012-10-17", Statement: [statement] }) });

const goodCluster: Props = {
  vpcCniOptions: { enableNetworkPolicy: true },
  endpointPublicAccess: true,
  endpointPrivateAccess: true,
  publicAccessCidrs: ["198.51.100.7/32"],
  enabledClusterLogTypes: ["api", "audit", "authenticator"],
  encryptionConfigKeyArn: "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab",
};

interface Case {
  /** Compliant resources: the rule reports nothing on them. */
  pass: ResourceView[];
  /** Each violating set must produce a message matching `match` that names the resource. */
  fail: Array<{ resources: ResourceView[]; match: RegExp }>;
}

const goodInstance: Props = {
  metadataOptions: { httpTokens: "required", httpPutResponseHopLimit: 1, httpEndpoint: "enabled" },
  rootBlockDevice: { encrypted: true },
};

const CASES: Record<string, Case> = {
  "ec2-imdsv2-hop-limit-1": {
    pass: [
      r("aws:ec2/instance:Instance", "builder", goodInstance),
      r("aws:ec2/instance:Instance", "no-imds", { metadataOptions: { httpEndpoint: "disabled" } }),
      r("aws:ec2/launchTemplate:LaunchTemplate", "lt", { metadataOptions: goodInstance.metadataOptions }),
    ],
    fail: [
      { resources: [r("aws:ec2/instance:Instance", "builder", {})], match: /'builder' allows IMDSv1.*httpTokens/ },
      {
        resources: [
          r("aws:ec2/instance:Instance", "builder", {
            metadataOptions: { httpTokens: "required", httpPutResponseHopLimit: 2 },
          }),
        ],
        match: /'builder' has instance-metadata hop limit 2.*HopLimit to 1/,
      },
      {
        resources: [
          r("aws:ec2/launchTemplate:LaunchTemplate", "gpu-lt", {
            metadataOptions: { httpTokens: "optional", httpPutResponseHopLimit: 1 },
          }),
        ],
        match: /launch template 'gpu-lt' allows IMDSv1/,
      },
    ],
  },
  "ec2-encrypted-volumes": {
    pass: [
      r("aws:ec2/instance:Instance", "builder", {
        ...goodInstance,
        ebsBlockDevices: [{ deviceName: "/dev/sdf", encrypted: true }],
      }),
      r("aws:ec2/launchTemplate:LaunchTemplate", "lt", {
        blockDeviceMappings: [{ deviceName: "/dev/xvda", ebs: { encrypted: "true" } }],
      }),
      r("aws:ebs/volume:Volume", "data", { encrypted: true }),
    ],
    fail: [
      {
        resources: [r("aws:ec2/instance:Instance", "builder", { rootBlockDevice: { volumeSize: 100 } })],
        match: /root volume of 'builder' is not encrypted/,
      },
      {
        resources: [
          r("aws:ec2/instance:Instance", "builder", { ...goodInstance, ebsBlockDevices: [{ deviceName: "/dev/sdf" }] }),
        ],
        match: /data volume 0 \(\/dev\/sdf\) of 'builder'/,
      },
      {
        resources: [
          r("aws:ec2/launchTemplate:LaunchTemplate", "lt", {
            blockDeviceMappings: [{ deviceName: "/dev/xvda", ebs: { encrypted: "false" } }],
          }),
        ],
        match: /volume \/dev\/xvda of 'lt' is not encrypted/,
      },
      { resources: [r("aws:ebs/volume:Volume", "data", {})], match: /EBS volume of 'data'/ },
    ],
  },
  "ec2-node-group-launch-template": {
    pass: [r("eks:index:ManagedNodeGroup", "gpu", { launchTemplate: { id: "lt-1", version: "1" } })],
    fail: [
      {
        resources: [r("eks:index:ManagedNodeGroup", "gpu", { diskSize: 100 })],
        match: /node group 'gpu' has no launch template/,
      },
      { resources: [r("aws:eks/nodeGroup:NodeGroup", "gpu", {})], match: /node group 'gpu'/ },
    ],
  },
  "ec2-no-open-ingress": {
    pass: [
      r("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule", "ssh", {
        ipProtocol: "tcp",
        fromPort: 22,
        toPort: 22,
        cidrIpv4: "10.1.0.0/16",
      }),
      r("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule", "https", {
        ipProtocol: "tcp",
        fromPort: 443,
        toPort: 443,
        cidrIpv4: "10.0.0.0/8",
      }),
      r("aws:ec2/securityGroupRule:SecurityGroupRule", "egress", {
        type: "egress",
        protocol: "-1",
        fromPort: 0,
        toPort: 0,
        cidrBlocks: ["0.0.0.0/0"],
      }),
    ],
    fail: [
      {
        resources: [
          r("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule", "ssh", {
            ipProtocol: "tcp",
            fromPort: 22,
            toPort: 22,
            cidrIpv4: "0.0.0.0/0",
          }),
        ],
        match: /'ssh' admits tcp 22-22 from 0.0.0.0\/0, the whole internet/,
      },
      {
        resources: [
          r("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule", "ssh", {
            ipProtocol: "tcp",
            fromPort: 22,
            toPort: 22,
            cidrIpv4: "10.0.0.0/15",
          }),
        ],
        match: /'ssh' admits SSH from 10.0.0.0\/15, broader than a \/16/,
      },
      {
        resources: [
          r("aws:ec2/securityGroup:SecurityGroup", "sg", {
            ingress: [{ protocol: "-1", fromPort: 0, toPort: 0, ipv6CidrBlocks: ["::/0"] }],
          }),
        ],
        match: /'sg' admits all ports from ::\/0/,
      },
      {
        resources: [
          r("aws:ec2/securityGroupRule:SecurityGroupRule", "all", {
            type: "ingress",
            protocol: "-1",
            fromPort: 0,
            toPort: 0,
            cidrBlocks: ["172.16.0.0/12"],
          }),
        ],
        match: /'all' admits SSH from 172.16.0.0\/12/,
      },
    ],
  },
  "ecr-repository-hardened": {
    pass: [
      r("aws:ecr/repository:Repository", "server", {
        imageTagMutability: "IMMUTABLE",
        imageScanningConfiguration: { scanOnPush: true },
        encryptionConfigurations: [{ encryptionType: "KMS" }],
      }),
      r("aws:ecr/repository:Repository", "server", {
        imageTagMutability: "IMMUTABLE_WITH_EXCLUSION",
        imageTagMutabilityExclusionFilters: [
          { filter: "live", filterType: "WILDCARD" },
          { filter: "previous", filterType: "WILDCARD" },
        ],
        imageScanningConfiguration: { scanOnPush: true },
        encryptionConfigurations: [{ encryptionType: "KMS" }],
      }),
    ],
    fail: [
      {
        resources: [
          r("aws:ecr/repository:Repository", "server", {
            imageTagMutability: "IMMUTABLE_WITH_EXCLUSION",
            imageTagMutabilityExclusionFilters: [{ filter: "bake-*", filterType: "WILDCARD" }],
            imageScanningConfiguration: { scanOnPush: true },
            encryptionConfigurations: [{ encryptionType: "KMS" }],
          }),
        ],
        match: /'server' exempts tags matching "bake-\*" from immutability/,
      },
      {
        resources: [
          r("aws:ecr/repository:Repository", "server", {
            imageTagMutability: "IMMUTABLE_WITH_EXCLUSION",
            imageScanningConfiguration: { scanOnPush: true },
            encryptionConfigurations: [{ encryptionType: "KMS" }],
          }),
        ],
        match: /'server' has mutable tags/,
      },
      {
        resources: [
          r("aws:ecr/repository:Repository", "server", {
            imageScanningConfiguration: { scanOnPush: true },
            encryptionConfigurations: [{ encryptionType: "KMS" }],
          }),
        ],
        match: /'server' has mutable tags/,
      },
      {
        resources: [
          r("aws:ecr/repository:Repository", "server", {
            imageTagMutability: "IMMUTABLE",
            encryptionConfigurations: [{ encryptionType: "KMS" }],
          }),
        ],
        match: /'server' does not scan images on push/,
      },
      {
        resources: [
          r("aws:ecr/repository:Repository", "server", {
            imageTagMutability: "IMMUTABLE",
            imageScanningConfiguration: { scanOnPush: true },
            encryptionConfigurations: [{ encryptionType: "AES256" }],
          }),
        ],
        match: /'server' is not encrypted with KMS/,
      },
    ],
  },
  "ecr-lifecycle-policy": {
    pass: [
      r("aws:ecr/repository:Repository", "server", { name: "p-dev/server" }),
      r("aws:ecr/lifecyclePolicy:LifecyclePolicy", "server", { repository: "p-dev/server", policy: "{}" }),
    ],
    fail: [
      {
        resources: [
          r("aws:ecr/repository:Repository", "server", { name: "p-dev/server" }),
          r("aws:ecr/repository:Repository", "base", { name: "p-dev/triton_with_ft" }),
          r("aws:ecr/lifecyclePolicy:LifecyclePolicy", "server", { repository: "p-dev/server", policy: "{}" }),
        ],
        match: /'base' \(p-dev\/triton_with_ft\) has no lifecycle policy/,
      },
    ],
  },
  "eks-endpoint-access": {
    pass: [
      r("eks:index:Cluster", "cluster", goodCluster),
      r("eks:index:Cluster", "private", { ...goodCluster, endpointPublicAccess: false, publicAccessCidrs: undefined }),
      r("aws:eks/cluster:Cluster", "inner", {
        vpcConfig: { endpointPublicAccess: true, publicAccessCidrs: ["203.0.113.0/24"] },
      }),
    ],
    fail: [
      {
        resources: [r("eks:index:Cluster", "cluster", { ...goodCluster, publicAccessCidrs: undefined })],
        match: /'cluster' exposes its API endpoint to 0.0.0.0\/0/,
      },
      {
        resources: [
          r("eks:index:Cluster", "cluster", { ...goodCluster, publicAccessCidrs: ["10.0.0.0/8", "0.0.0.0/0"] }),
        ],
        match: /exposes its API endpoint to 0.0.0.0\/0/,
      },
      {
        resources: [r("aws:eks/cluster:Cluster", "inner", { vpcConfig: {} })],
        match: /'inner' exposes its API endpoint/,
      },
    ],
  },
  "eks-control-plane-logging": {
    pass: [
      r("eks:index:Cluster", "cluster", goodCluster),
      r("aws:eks/cluster:Cluster", "inner", { enabledClusterLogTypes: ["api", "audit", "authenticator", "scheduler"] }),
    ],
    fail: [
      {
        resources: [r("eks:index:Cluster", "cluster", { ...goodCluster, enabledClusterLogTypes: ["api"] })],
        match: /'cluster' does not log audit, authenticator/,
      },
      {
        resources: [r("aws:eks/cluster:Cluster", "inner", {})],
        match: /'inner' does not log api, audit, authenticator/,
      },
    ],
  },
  "eks-secrets-encryption": {
    pass: [
      r("eks:index:Cluster", "cluster", goodCluster),
      r("aws:eks/cluster:Cluster", "inner", {
        encryptionConfig: { resources: ["secrets"], provider: { keyArn: goodCluster.encryptionConfigKeyArn } },
      }),
    ],
    fail: [
      {
        resources: [r("eks:index:Cluster", "cluster", { ...goodCluster, encryptionConfigKeyArn: undefined })],
        match: /'cluster' stores Kubernetes secrets with no KMS key/,
      },
      {
        resources: [
          r("eks:index:Cluster", "cluster", {
            ...goodCluster,
            encryptionConfigKeyArn: "arn:aws:kms:us-east-1:123456789012:alias/aws/eks",
          }),
        ],
        match: /not a customer-managed key ARN/,
      },
      {
        resources: [
          r("aws:eks/cluster:Cluster", "inner", {
            encryptionConfig: { resources: [], provider: { keyArn: goodCluster.encryptionConfigKeyArn } },
          }),
        ],
        match: /'inner' stores Kubernetes secrets with no KMS key/,
      },
    ],
  },
  "kms-key-rotation-and-deletion-window": {
    pass: [r("aws:kms/key:Key", "secrets", { enableKeyRotation: true, deletionWindowInDays: 30 })],
    fail: [
      {
        resources: [r("aws:kms/key:Key", "secrets", { deletionWindowInDays: 30 })],
        match: /'secrets' does not rotate/,
      },
      {
        resources: [r("aws:kms/key:Key", "secrets", { enableKeyRotation: true })],
        match: /'secrets' has deletion window "unset"/,
      },
      {
        resources: [r("aws:kms/key:Key", "secrets", { enableKeyRotation: true, deletionWindowInDays: 3 })],
        match: /deletion window 3/,
      },
    ],
  },
  "eks-network-policy-enforced": {
    pass: [
      r("eks:index:Cluster", "cluster", goodCluster),
      r("aws:eks/addon:Addon", "cni", { addonName: "vpc-cni", configurationValues: '{"enableNetworkPolicy":"true"}' }),
      r("aws:eks/addon:Addon", "coredns", { addonName: "coredns" }),
    ],
    fail: [
      {
        resources: [r("eks:index:Cluster", "cluster", { ...goodCluster, vpcCniOptions: undefined })],
        match: /'cluster' does not enforce NetworkPolicies.*enableNetworkPolicy: true/,
      },
      {
        resources: [r("aws:eks/addon:Addon", "cni", { addonName: "vpc-cni", configurationValues: "{}" })],
        match: /add-on 'cni' \(vpc-cni\) does not enforce NetworkPolicies/,
      },
    ],
  },
  "iam-least-privilege": {
    pass: [
      iamPolicy({ Effect: "Allow", Action: ["ecr:GetAuthorizationToken"], Resource: "*" }),
      iamPolicy({
        Effect: "Allow",
        Action: ["ecr:PutImage"],
        Resource: ["arn:aws:ecr:us-east-1:123456789012:repository/x"],
      }),
      iamPolicy({
        Effect: "Allow",
        Action: ["elasticloadbalancing:CreateLoadBalancer"],
        Resource: "*",
        Condition: { StringEquals: { "aws:RequestTag/elbv2.k8s.aws/cluster": "c" } },
      }),
      iamPolicy({
        Effect: "Allow",
        Action: ["elasticloadbalancing:AddTags"],
        Resource: "arn:aws:elasticloadbalancing:*:*:targetgroup/*/*",
        Condition: { Null: { "aws:ResourceTag/elbv2.k8s.aws/cluster": "false" } },
      }),
      iamPolicy({ Effect: "Deny", Action: "*", Resource: "*" }),
      r("aws:iam/role:Role", "role", {
        assumeRolePolicy: "{}",
        inlinePolicies: [
          {
            name: "ok",
            policy: JSON.stringify({ Statement: { Effect: "Allow", Action: "ec2:DescribeVpcs", Resource: "*" } }),
          },
        ],
      }),
    ],
    fail: [
      {
        resources: [iamPolicy({ Sid: "All", Effect: "Allow", Action: "*", Resource: "*" })],
        match: /statement All allows wildcard action\(s\) \*/,
      },
      {
        resources: [iamPolicy({ Effect: "Allow", Action: ["s3:*"], Resource: "arn:aws:s3:::b/*" })],
        match: /wildcard action\(s\) s3:\*/,
      },
      {
        resources: [iamPolicy({ Effect: "Allow", Action: ["ec2:AuthorizeSecurityGroupIngress"], Resource: "*" })],
        match: /allows ec2:AuthorizeSecurityGroupIngress on Resource "\*"/,
      },
      {
        resources: [
          iamPolicy({
            Effect: "Allow",
            Action: ["elasticloadbalancing:CreateLoadBalancer"],
            Resource: "*",
            Condition: { Null: { "aws:RequestTag/elbv2.k8s.aws/cluster": "true" } },
          }),
        ],
        match: /CreateLoadBalancer on Resource "\*"/,
      },
      {
        resources: [
          iamPolicy({
            Sid: "Tags",
            Effect: "Allow",
            Action: ["elasticloadbalancing:AddTags"],
            Resource: "arn:aws:elasticloadbalancing:us-east-1:123456789012:loadbalancer/net/*/*",
          }),
        ],
        match: /statement Tags allows elasticloadbalancing:AddTags .* with no condition/,
      },
      { resources: [iamPolicy({ Effect: "Allow", NotAction: ["iam:*"], Resource: "*" })], match: /NotAction/ },
      {
        resources: [r("aws:iam/rolePolicy:RolePolicy", "rp", { policy: "not json" })],
        match: /'rp': policy is not a JSON policy document/,
      },
      {
        resources: [
          r("aws:iam/role:Role", "role", {
            inlinePolicies: [
              {
                name: "bad",
                policy: JSON.stringify({ Statement: [{ Effect: "Allow", Action: "iam:PassRole", Resource: "*" }] }),
              },
            ],
          }),
        ],
        match: /Role 'role' inlinePolicies\[0\] \(bad\): .*iam:PassRole on Resource "\*"/,
      },
    ],
  },
  "iam-managed-policy-allow-list": {
    pass: [
      r("aws:iam/rolePolicyAttachment:RolePolicyAttachment", "ssm", {
        policyArn: "arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore",
      }),
      r("aws:iam/rolePolicyAttachment:RolePolicyAttachment", "own", {
        policyArn: "arn:aws:iam::123456789012:policy/mine",
      }),
    ],
    fail: [
      {
        resources: [
          r("aws:iam/rolePolicyAttachment:RolePolicyAttachment", "admin", {
            policyArn: "arn:aws:iam::aws:policy/AdministratorAccess",
          }),
        ],
        match: /'admin' attaches the AWS-managed policy AdministratorAccess/,
      },
      {
        resources: [
          r("aws:iam/rolePolicyAttachment:RolePolicyAttachment", "ecr", {
            policyArn: "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryFullAccess",
          }),
        ],
        match: /AmazonEC2ContainerRegistryFullAccess/,
      },
    ],
  },
  "k8s-run-as-non-root": {
    pass: [deployment()],
    fail: [
      {
        resources: [
          deployment((pod, c) => {
            delete (pod.securityContext as Props).runAsNonRoot;
            delete (c.securityContext as Props).runAsNonRoot;
          }),
        ],
        match: /Deployment 'triton\/triton' container 'tritonserver' may run as root/,
      },
      {
        resources: [
          deployment((_p, c) => {
            (c.securityContext as Props).runAsUser = 0;
          }),
        ],
        match: /runs as uid 0/,
      },
    ],
  },
  "k8s-no-privilege-escalation": {
    pass: [deployment()],
    fail: [
      {
        resources: [
          deployment((_p, c) => {
            delete (c.securityContext as Props).allowPrivilegeEscalation;
          }),
        ],
        match: /'tritonserver' allows privilege escalation/,
      },
      {
        resources: [
          deployment((_p, c) => {
            (c.securityContext as Props).privileged = true;
          }),
        ],
        match: /is privileged/,
      },
    ],
  },
  "k8s-drop-all-capabilities": {
    pass: [
      deployment((_p, c) => {
        (c.securityContext as Props).capabilities = { drop: ["ALL"], add: ["NET_BIND_SERVICE"] };
      }),
    ],
    fail: [
      {
        resources: [
          deployment((_p, c) => {
            delete (c.securityContext as Props).capabilities;
          }),
        ],
        match: /keeps the default capabilities/,
      },
      {
        resources: [
          deployment((_p, c) => {
            (c.securityContext as Props).capabilities = { drop: ["ALL"], add: ["SYS_ADMIN"] };
          }),
        ],
        match: /adds capabilities SYS_ADMIN/,
      },
    ],
  },
  "k8s-seccomp-runtime-default": {
    pass: [deployment()],
    fail: [
      {
        resources: [
          deployment((pod) => {
            delete (pod.securityContext as Props).seccompProfile;
          }),
        ],
        match: /seccomp profile unset/,
      },
    ],
  },
  "k8s-read-only-root-filesystem": {
    pass: [
      deployment(),
      deployment((_p, c, meta) => {
        (c.securityContext as Props).readOnlyRootFilesystem = false;
        meta.annotations = {
          "triton-ft.io/policy-exception.k8s-read-only-root-filesystem":
            "writes its cache under /var/lib/x, no volume fits",
        };
      }),
    ],
    fail: [
      {
        resources: [
          deployment((_p, c) => {
            delete (c.securityContext as Props).readOnlyRootFilesystem;
          }),
        ],
        match: /has a writable root filesystem/,
      },
      {
        resources: [
          deployment((_p, c, meta) => {
            delete (c.securityContext as Props).readOnlyRootFilesystem;
            meta.annotations = { "triton-ft.io/policy-exception.k8s-read-only-root-filesystem": "needed" };
          }),
        ],
        match: /has a writable root filesystem/,
      },
    ],
  },
  "k8s-service-account-token": {
    pass: [
      deployment(),
      deployment((pod, _c, meta) => {
        delete pod.automountServiceAccountToken;
        meta.annotations = {
          "triton-ft.io/policy-exception.k8s-service-account-token": "watches Endpoints to route to ready pods",
        };
      }),
    ],
    fail: [
      {
        resources: [
          deployment((pod) => {
            delete pod.automountServiceAccountToken;
          }),
        ],
        match: /Deployment 'triton\/triton' mounts a service-account token/,
      },
    ],
  },
  "k8s-memory-limits": {
    pass: [deployment()],
    fail: [
      {
        resources: [
          deployment((_p, c) => {
            c.resources = { requests: { memory: "1Gi" } };
          }),
        ],
        match: /'tritonserver' has no memory limit/,
      },
    ],
  },
  "k8s-image-digest": {
    pass: [deployment()],
    fail: [
      {
        resources: [
          deployment((_p, c) => {
            c.image = "nvcr.io/nvidia/tritonserver:23.05-py3";
          }),
        ],
        match: /uses image "nvcr.io\/nvidia\/tritonserver:23.05-py3", not pinned by digest/,
      },
      {
        // A digest without its registry: the node would pull it from wherever its runtime defaults to.
        resources: [
          deployment((_p, c) => {
            c.image = `tritonserver@sha256:${"ab".repeat(32)}`;
          }),
        ],
        match: /uses image "tritonserver@sha256:(ab){32}", not pinned by digest/,
      },
      {
        resources: [
          deployment((_p, c) => {
            c.image = "triton-ft-dev/server:synth";
          }),
        ],
        match: /not pinned by digest/,
      },
      {
        resources: [
          r("kubernetes:batch/v1:CronJob", "job", {
            metadata: { name: "job", namespace: "triton" },
            spec: {
              jobTemplate: { spec: { template: { spec: { initContainers: [{ name: "init", image: "busybox" }] } } } },
            },
          }),
        ],
        match: /CronJob 'triton\/job' container 'init' uses image "busybox"/,
      },
    ],
  },
  "k8s-load-balancer-internal": {
    pass: [
      service({ "service.beta.kubernetes.io/aws-load-balancer-scheme": "internal" }),
      service({}, "ClusterIP"),
      service({
        "service.beta.kubernetes.io/aws-load-balancer-scheme": "internet-facing",
        "service.beta.kubernetes.io/aws-load-balancer-ssl-cert": "arn:aws:acm:us-east-1:123456789012:certificate/x",
        "service.beta.kubernetes.io/aws-load-balancer-ssl-ports": "http,grpc",
        "triton-ft.io/client-auth": "api-key",
      }),
    ],
    fail: [
      {
        resources: [service({ "service.beta.kubernetes.io/aws-load-balancer-scheme": "internet-facing" })],
        match:
          /Service 'triton\/triton' is reachable from outside the VPC .* without TLS on every port and client authentication/,
      },
      { resources: [service({})], match: /scheme "unset"/ },
      {
        resources: [
          service({
            "service.beta.kubernetes.io/aws-load-balancer-scheme": "internet-facing",
            "service.beta.kubernetes.io/aws-load-balancer-ssl-cert": "arn:aws:acm:us-east-1:123456789012:certificate/x",
            "service.beta.kubernetes.io/aws-load-balancer-ssl-ports": "8000",
            "triton-ft.io/client-auth": "api-key",
          }),
        ],
        match: /without TLS on every port\./,
      },
    ],
  },
  "k8s-network-policy-default-deny": {
    pass: [deployment(), denyAll(), denyAll("triton", { egress: [{ ports: [{ port: 53, protocol: "UDP" }] }] })],
    fail: [
      {
        resources: [deployment()],
        match: /namespace 'triton' \(Deployment 'triton'\) has no default-deny NetworkPolicy/,
      },
      { resources: [deployment(), denyAll("other")], match: /namespace 'triton'/ },
      { resources: [deployment(), denyAll("triton", { policyTypes: ["Ingress"] })], match: /namespace 'triton'/ },
      { resources: [deployment(), denyAll("triton", { ingress: [{}] })], match: /namespace 'triton'/ },
      {
        resources: [deployment(), denyAll("triton", { egress: [{ ports: [{ port: 443 }] }] })],
        match: /namespace 'triton'/,
      },
      {
        resources: [deployment(), denyAll("triton", { podSelector: { matchLabels: { app: "x" } } })],
        match: /namespace 'triton'/,
      },
    ],
  },
};

function messages(rule: Rule, resources: ResourceView[]): string[] {
  return rule.kind === "resource"
    ? resources.flatMap((x) => rule.check(x))
    : rule.check(resources).map((v) => v.message);
}

const RULES = allRules();

describe.each(RULES.map((rule) => [rule.name, rule] as const))("%s", (name, rule) => {
  const c = CASES[name];
  it("has crafted cases", () => {
    expect(c, `no crafted violation for rule ${name}`).toBeDefined();
    expect(c.fail.length).toBeGreaterThan(0);
  });
  if (!c) return;
  it("accepts the compliant resources", () => {
    expect(messages(rule, c.pass)).toEqual([]);
  });
  it.each(c.fail.map((f, i) => [i, f] as const))("reports crafted violation %i", (_i, f) => {
    const found = messages(rule, f.resources);
    expect(found.length, `rule ${name} reported nothing`).toBeGreaterThan(0);
    expect(found.join("\n")).toMatch(f.match);
    for (const m of found) expect(m).toMatch(/Fix: /);
  });
});

it("every crafted case belongs to a rule of the pack", () => {
  const names = new Set(RULES.map((x) => x.name));
  expect(Object.keys(CASES).filter((n) => !names.has(n))).toEqual([]);
});
