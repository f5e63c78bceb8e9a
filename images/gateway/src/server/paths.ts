/** Which API a path belongs to: it decides who may call it and which error body it gets. */

/** Probes answer without a key: the load balancer and the kubelet have none. */
export const PUBLIC_PATHS: ReadonlySet<string> = new Set(["/healthz", "/readyz"]);

/** The path without its query string. */
export function pathOf(url: string): string {
  const query = url.indexOf("?");
  return query === -1 ? url : url.slice(0, query);
}

/**
 * The KServe v2 API lives under /v2 and answers errors in KServe's shape, even
 * on paths no route matches (a 401 or 404 never reaches a route's context).
 */
export function isKserve(url: string): boolean {
  return url === "/v2" || url.startsWith("/v2/") || url.startsWith("/v2?");
}
