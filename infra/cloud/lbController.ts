/**
 * Identity of the AWS Load Balancer Controller: its namespace and service account,
 * which its IRSA trust policy names (iam.ts, serviceAccountTrustPolicy). Its
 * permissions are the controller's own published policy (lbControllerIamPolicy.ts). Pure.
 */

export const LB_CONTROLLER_NAMESPACE = "kube-system";
export const LB_CONTROLLER_SERVICE_ACCOUNT = "aws-load-balancer-controller";
