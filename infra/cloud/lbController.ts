/**
 * Identity of the AWS Load Balancer Controller: its namespace, service account
 * and IRSA trust policy. Its permissions are the controller's own published
 * policy (lbControllerIamPolicy.ts). Pure.
 */

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
