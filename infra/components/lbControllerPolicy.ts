/**
 * Identity of the AWS Load Balancer Controller: its namespace, service account
 * and IRSA trust policy. Its permissions are the controller's own published
 * policy (infra/cloud/lbControllerIamPolicy.ts). Pure.
 */

/** Tag the controller puts on every ELB resource and security group it creates. */
export const CLUSTER_TAG = "elbv2.k8s.aws/cluster";
export const LB_CONTROLLER_NAMESPACE = "kube-system";
export const LB_CONTROLLER_SERVICE_ACCOUNT = "aws-load-balancer-controller";

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
