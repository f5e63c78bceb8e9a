/**
 * serving.store resolved: which store the stack provides for the gateway.
 * Pure, no Pulumi: the plan, validation and the docs share it.
 */
import type { StackConfig } from "./schema";

export type StoreMode = "managed" | "inCluster" | "none";

/** Default volume of the in-cluster Valkey: its append-only file holds counters and a year of usage hashes. */
export const DEFAULT_STORE_STORAGE_GIB = 1;

/**
 * The mode the stack uses: the one set, else managed when the stack creates
 * the cluster (it owns the VPC and the nodes' security group ElastiCache
 * admits), else inCluster.
 */
export function storeMode(config: Pick<StackConfig, "serving" | "cluster">): StoreMode {
  return config.serving.store.mode ?? (config.cluster.mode === "create" ? "managed" : "inCluster");
}
