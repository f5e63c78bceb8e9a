/**
 * IAM for the AWS Load Balancer Controller, scoped to what an NLB for a
 * Service needs (no ALB, WAF, Shield or Cognito) and to load balancers, target
 * groups and security groups the controller tagged for this cluster. Pure: the
 * component passes resolved names and ARNs in.
 */

/** Tag the controller puts on every ELB resource and security group it creates. */
export const CLUSTER_TAG = "elbv2.k8s.aws/cluster";
export const LB_CONTROLLER_NAMESPACE = "kube-system";
export const LB_CONTROLLER_SERVICE_ACCOUNT = "aws-load-balancer-controller";

interface Statement {
  Sid: string;
  Effect: "Allow";
  Action: string[];
  Resource: string | string[];
  Condition?: Record<string, Record<string, string | string[]>>;
}

export interface PolicyDocument {
  Version: "2012-10-17";
  Statement: Statement[];
}

export interface ControllerPolicyArgs {
  partition: string;
  region: string;
  accountId: string;
  clusterName: string;
  vpcId: string;
}

export function lbControllerPolicy(a: ControllerPolicyArgs): PolicyDocument {
  const elb = (kind: string) => `arn:${a.partition}:elasticloadbalancing:${a.region}:${a.accountId}:${kind}`;
  const ownTag = { [`aws:ResourceTag/${CLUSTER_TAG}`]: a.clusterName };
  const vpcArn = `arn:${a.partition}:ec2:${a.region}:${a.accountId}:vpc/${a.vpcId}`;
  const sgArn = `arn:${a.partition}:ec2:${a.region}:${a.accountId}:security-group/*`;
  const lbArns = [elb("loadbalancer/net/*/*"), elb("targetgroup/*/*")];
  return {
    Version: "2012-10-17",
    Statement: [
      {
        Sid: "ElbServiceLinkedRole",
        Effect: "Allow",
        Action: ["iam:CreateServiceLinkedRole"],
        Resource: "*",
        Condition: { StringEquals: { "iam:AWSServiceName": "elasticloadbalancing.amazonaws.com" } },
      },
      {
        // Describe calls do not support resource-level permissions.
        Sid: "Discover",
        Effect: "Allow",
        Action: [
          "ec2:DescribeAccountAttributes",
          "ec2:DescribeAddresses",
          "ec2:DescribeAvailabilityZones",
          "ec2:DescribeInternetGateways",
          "ec2:DescribeVpcs",
          "ec2:DescribeSubnets",
          "ec2:DescribeSecurityGroups",
          "ec2:DescribeInstances",
          "ec2:DescribeNetworkInterfaces",
          "ec2:DescribeTags",
          "ec2:DescribeRouteTables",
          "ec2:GetSecurityGroupsForVpc",
          "elasticloadbalancing:DescribeLoadBalancers",
          "elasticloadbalancing:DescribeLoadBalancerAttributes",
          "elasticloadbalancing:DescribeListeners",
          "elasticloadbalancing:DescribeListenerAttributes",
          "elasticloadbalancing:DescribeTargetGroups",
          "elasticloadbalancing:DescribeTargetGroupAttributes",
          "elasticloadbalancing:DescribeTargetHealth",
          "elasticloadbalancing:DescribeTags",
          "elasticloadbalancing:DescribeCapacityReservation",
        ],
        Resource: "*",
      },
      {
        // CreateSecurityGroup needs the VPC as a resource: naming this VPC's ARN confines it.
        Sid: "CreateSecurityGroupsInThisVpc",
        Effect: "Allow",
        Action: ["ec2:CreateSecurityGroup"],
        Resource: [vpcArn, sgArn],
      },
      {
        // Rules go on the NLB's own group and on the cluster group the pods use, both in this VPC.
        Sid: "RulesInThisVpc",
        Effect: "Allow",
        Action: ["ec2:AuthorizeSecurityGroupIngress", "ec2:RevokeSecurityGroupIngress"],
        Resource: sgArn,
        Condition: { ArnEquals: { "ec2:Vpc": vpcArn } },
      },
      {
        Sid: "TagNewSecurityGroups",
        Effect: "Allow",
        Action: ["ec2:CreateTags"],
        Resource: sgArn,
        Condition: {
          StringEquals: { "ec2:CreateAction": "CreateSecurityGroup", [`aws:RequestTag/${CLUSTER_TAG}`]: a.clusterName },
        },
      },
      {
        Sid: "OwnSecurityGroups",
        Effect: "Allow",
        Action: ["ec2:CreateTags", "ec2:DeleteTags", "ec2:DeleteSecurityGroup"],
        Resource: sgArn,
        Condition: { StringEquals: ownTag },
      },
      {
        Sid: "CreateTaggedForThisCluster",
        Effect: "Allow",
        Action: ["elasticloadbalancing:CreateLoadBalancer", "elasticloadbalancing:CreateTargetGroup"],
        Resource: "*",
        Condition: { StringEquals: { [`aws:RequestTag/${CLUSTER_TAG}`]: a.clusterName } },
      },
      {
        Sid: "TagOnCreate",
        Effect: "Allow",
        Action: ["elasticloadbalancing:AddTags"],
        Resource: lbArns,
        Condition: {
          StringEquals: { "elasticloadbalancing:CreateAction": ["CreateLoadBalancer", "CreateTargetGroup"] },
        },
      },
      {
        Sid: "ManageOwnLoadBalancers",
        Effect: "Allow",
        Action: [
          "elasticloadbalancing:AddTags",
          "elasticloadbalancing:RemoveTags",
          "elasticloadbalancing:ModifyLoadBalancerAttributes",
          "elasticloadbalancing:SetIpAddressType",
          "elasticloadbalancing:SetSecurityGroups",
          "elasticloadbalancing:SetSubnets",
          "elasticloadbalancing:DeleteLoadBalancer",
          "elasticloadbalancing:ModifyTargetGroup",
          "elasticloadbalancing:ModifyTargetGroupAttributes",
          "elasticloadbalancing:DeleteTargetGroup",
          "elasticloadbalancing:RegisterTargets",
          "elasticloadbalancing:DeregisterTargets",
        ],
        Resource: lbArns,
        Condition: { StringEquals: ownTag },
      },
      {
        // Listeners carry no tag condition key at creation; they can only be added to a load balancer this policy lets it own.
        Sid: "Listeners",
        Effect: "Allow",
        Action: [
          "elasticloadbalancing:CreateListener",
          "elasticloadbalancing:DeleteListener",
          "elasticloadbalancing:ModifyListener",
          "elasticloadbalancing:ModifyListenerAttributes",
          "elasticloadbalancing:AddTags",
        ],
        Resource: [elb("loadbalancer/net/*/*"), elb("listener/net/*/*/*")],
      },
    ],
  };
}

/** Trust policy for IRSA: only the controller's service account, through this cluster's OIDC provider. */
export function irsaTrustPolicy(oidcProviderArn: string, oidcIssuer: string): object {
  const issuer = oidcIssuer.replace(/^https:\/\//, "");
  return {
    Version: "2012-10-17",
    Statement: [
      {
        Effect: "Allow",
        Principal: { Federated: oidcProviderArn },
        Action: "sts:AssumeRoleWithWebIdentity",
        Condition: {
          StringEquals: {
            [`${issuer}:sub`]: `system:serviceaccount:${LB_CONTROLLER_NAMESPACE}:${LB_CONTROLLER_SERVICE_ACCOUNT}`,
            [`${issuer}:aud`]: "sts.amazonaws.com",
          },
        },
      },
    ],
  };
}
