/**
 * The Prometheus Operator's ServiceMonitor, one shape for every metrics Service the
 * stack scrapes (Triton, the gateway, the DCGM exporter). Pure.
 */
import { SCRAPE_INTERVAL_SECONDS } from "./prometheus";

export interface ServiceMonitor {
  apiVersion: "monitoring.coreos.com/v1";
  kind: "ServiceMonitor";
  metadata: { name: string; namespace: string; labels: Record<string, string> };
  spec: {
    selector: { matchLabels: Record<string, string> };
    namespaceSelector: { matchNames: string[] };
    endpoints: Array<{ port: string; path: string; interval: string; scrapeTimeout: string }>;
  };
}

/** Scrapes the `metrics` port of the Services matching matchLabels in namespace. */
export function serviceMonitor(
  name: string,
  namespace: string,
  labels: Record<string, string>,
  matchLabels: Record<string, string>,
): ServiceMonitor {
  return {
    apiVersion: "monitoring.coreos.com/v1",
    kind: "ServiceMonitor",
    metadata: { name, namespace, labels },
    spec: {
      selector: { matchLabels },
      namespaceSelector: { matchNames: [namespace] },
      endpoints: [
        {
          port: "metrics",
          path: "/metrics",
          interval: `${SCRAPE_INTERVAL_SECONDS}s`,
          // Under the interval, so a slow scrape never overlaps the next one.
          scrapeTimeout: `${SCRAPE_INTERVAL_SECONDS - 5}s`,
        },
      ],
    },
  };
}
