/** IAM documents the stack attaches: who may assume its roles, and what the builder may do in ECR. Pure JSON. */

/** Trust policy of an EC2 instance role (the builder, the EKS nodes). */
export const EC2_ASSUME_ROLE_POLICY = JSON.stringify({
  Version: "2012-10-17",
  Statement: [{ Effect: "Allow", Principal: { Service: "ec2.amazonaws.com" }, Action: "sts:AssumeRole" }],
});

export interface PolicyDocument {
  Version: string;
  Statement: Array<Record<string, unknown>>;
}

/**
 * IRSA trust: only the named service account, through this cluster's OIDC provider, may assume
 * the role (the LB controller's and Karpenter's roles).
 */
export function serviceAccountTrustPolicy(
  oidcProviderArn: string,
  oidcIssuer: string,
  namespace: string,
  serviceAccount: string,
): PolicyDocument {
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
            [`${issuer}:sub`]: `system:serviceaccount:${namespace}:${serviceAccount}`,
            [`${issuer}:aud`]: "sts.amazonaws.com",
          },
        },
      },
    ],
  };
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

/** AWS managed policies every EKS worker node needs: kubelet, the VPC CNI, image pulls from ECR. */
export const EKS_NODE_POLICIES = [
  "AmazonEKSWorkerNodePolicy",
  "AmazonEKS_CNI_Policy",
  "AmazonEC2ContainerRegistryReadOnly",
] as const;
