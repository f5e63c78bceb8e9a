/**
 * The subnet role tags load balancers are placed by: the stack's VPC sets them
 * (components/network.ts) and tags.ts counts their keys against the tag limit;
 * below both, so the resolve rules and the components read one definition.
 */
/** The subnet tags the AWS load balancer controller and EKS use to place load balancers. */
export const PUBLIC_SUBNET_TAGS = { "kubernetes.io/role/elb": "1" } as const;
export const PRIVATE_SUBNET_TAGS = { "kubernetes.io/role/internal-elb": "1" } as const;
