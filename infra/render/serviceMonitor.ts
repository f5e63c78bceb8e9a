import { SCRAPE_INTERVAL_SECONDS } from "../conventions/metrics"; /**
 * The Prometheus Operator's ServiceMonitor, one shape for every metrics Service the
 * stack scrapes (Triton, the gateway, the DCGM exporter). Pure.
 */

export interface ServiceMonitor {
  apiVersion: "monitoring.coreos.com/v1";
  kind: "ServiceMonitor";
  metadata: { name: string; namespace: string; labels: Record<string, string> };
  spec: {
    selector: { matchLabels: Record<string, string> };
    namespaceSelector: { matchNames: string[] };
    /** Node metadata on the targets (Prometheus >= 2.37), for relabelings that read node labels. */
    attachMetadata?: { node: boolean };
    endpoints: Array<{
      port: string;
      path: string;
      interval: string;
      scrapeTimeout: string;
      relabelings?: ServiceMonitorRelabeling[];
    }>;
  };
}

/** One relabeling of a scrape target (the Prometheus Operator's RelabelConfig, the subset the stack uses). */
export interface ServiceMonitorRelabeling {
  sourceLabels: string[];
  targetLabel: string;
  action: "replace";
}

/** What some scrapes add: node metadata and relabelings of the target's labels. */
export interface ServiceMonitorExtras {
  attachNodeMetadata?: boolean;
  relabelings?: ServiceMonitorRelabeling[];
}

/** Scrapes the `metrics` port of the Services matching matchLabels in namespace. */
export function serviceMonitor(
  name: string,
  namespace: string,
  labels: Record<string, string>,
  matchLabels: Record<string, string>,
  extras: ServiceMonitorExtras = {},
): ServiceMonitor {
  return {
    apiVersion: "monitoring.coreos.com/v1",
    kind: "ServiceMonitor",
    metadata: { name, namespace, labels },
    spec: {
      selector: { matchLabels },
      namespaceSelector: { matchNames: [namespace] },
      ...(extras.attachNodeMetadata ? { attachMetadata: { node: true } } : {}),
      endpoints: [
        {
          port: "metrics",
          path: "/metrics",
          interval: `${SCRAPE_INTERVAL_SECONDS}s`,
          // Under the interval, so a slow scrape never overlaps the next one.
          scrapeTimeout: `${SCRAPE_INTERVAL_SECONDS - 5}s`,
          ...(extras.relabelings ? { relabelings: extras.relabelings } : {}),
        },
      ],
    },
  };
}
