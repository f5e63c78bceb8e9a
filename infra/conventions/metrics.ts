/**
 * The intervals the scalers see the load through: the scaling arithmetic
 * (resolve/scaling.ts, its detection time) and the renderers (ServiceMonitors,
 * KEDA ScaledObjects, the rate() window of the queries) read the same numbers.
 */

/** Prometheus scrape interval of the Triton and DCGM ServiceMonitors. */
export const SCRAPE_INTERVAL_SECONDS = 15;

/** rate() window of the scaling query: four scrapes, as Prometheus advises for rate() over counters. */
export const RATE_WINDOW_SECONDS = 4 * SCRAPE_INTERVAL_SECONDS;

/** KEDA pollingInterval of the ScaledObject. */
export const KEDA_POLLING_SECONDS = 15;
