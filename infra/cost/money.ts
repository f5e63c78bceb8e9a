/**
 * The monthly sum, itemised: every line is quantity × unit price from the
 * vendored table, with the arithmetic written out beside it. Lines a model
 * owns (its GPU nodes, their volumes, its server image repository) carry the
 * model's id: they are the resources tagged with it (infra/tags.ts), so a
 * cost report by tag gives each model the same sum. The rest are the
 * stack's (control plane, system nodes, NAT and NLB hours, the NAT bytes of
 * every model's image pulls, which AWS bills on the shared NAT gateway,
 * builders, shared images, the gateway's store, the KMS key).
 *
 * Each line has a low and a high end: an autoscaled model at its floor
 * (`min`) and at its ceiling (`max`); a fixed size is the same at both.
 * Usage-priced lines (NLB capacity units, NAT bytes, store ECPUs) take the
 * stated traffic of cost/assumptions.ts. A unit the table cannot price
 * becomes a line without a price and a warning, never a guess.
 */
import { NLCU_TCP, STORE } from "./assumptions";
import { HOURS_PER_MONTH } from "../catalog/prices";
import type { CapacityType, LineItem, ModelCostInput, StackCostInput } from "./input";
import { instanceHourly, unitPrice, type Priced, type RegionPrices, type UnitKey } from "../catalog/prices";
import { estimateTokens } from "./tokens";

const GiB = 1024 ** 3;
const H = HOURS_PER_MONTH;

export interface MonthlyCost {
  items: LineItem[];
  warnings: string[];
}

/** A unit price as the table states it (no rounding: the arithmetic must be checkable). */
const money = (n: number) => `$${n}`;
const qty = (n: number) => (Number.isInteger(n) ? String(n) : n.toFixed(2));
const both = (n: number) => ({ min: n, max: n });

interface LineSpec {
  id: string;
  scope: string;
  label: string;
  quantity: { min: number; max: number };
  unit: string;
  key: UnitKey | "ec2";
  price: Priced | undefined;
  basis: (q: number, usd: number) => string;
  note?: string;
  outsideStack?: string;
}

function line(s: LineSpec): LineItem {
  const p = s.price;
  const item: LineItem = {
    id: s.id,
    scope: s.scope,
    label: s.label,
    quantity: s.quantity,
    unit: s.unit,
    monthlyUsd: p ? { min: s.quantity.min * p.usd, max: s.quantity.max * p.usd } : { min: 0, max: 0 },
    // The arithmetic at each end (one when they agree), so every figure can be checked by hand.
    basis: !p
      ? "unpriced"
      : s.quantity.min === s.quantity.max
        ? s.basis(s.quantity.max, p.usd)
        : `min ${s.basis(s.quantity.min, p.usd)}; max ${s.basis(s.quantity.max, p.usd)}`,
  };
  if (p) item.price = { usd: p.usd, key: s.key, source: p.source };
  if (s.note) item.note = s.note;
  if (s.outsideStack) item.outsideStack = s.outsideStack;
  return item;
}

const CAPACITY_NOTE: Record<CapacityType, string | undefined> = {
  "on-demand": undefined,
  spot: "capacityType spot: at most this (the on-demand price; Karpenter falls back to on-demand and a spot price never exceeds it); the spot discount is not priced",
  reserved:
    "capacity reservations bill at the on-demand rate whether or not a node runs in them: the reservation's own size, not priced here, is the real floor",
};

/** One model's lines: GPU nodes, their root volumes, its server images. */
export function modelLines(stack: StackCostInput, m: ModelCostInput, r: RegionPrices, warnings: string[]): LineItem[] {
  const hourly = instanceHourly(r, m.instanceType);
  const priced = "usd" in hourly ? hourly : undefined;
  if ("missing" in hourly)
    warnings.push(
      `${m.id}: no on-demand price for ${m.instanceType} in the table (${hourly.missing}); its GPU nodes are left out of the sum`,
    );
  const range = m.nodes.min === m.nodes.max ? `${m.nodes.min}` : `${m.nodes.min}..${m.nodes.max}`;
  // On an existing cluster the model's pods take GPU nodes the stack does not create.
  const outsideStack =
    stack.cluster.mode === "existing"
      ? "an existing cluster's GPU nodes: the cluster's owner pays them, and they carry its tags, not this stack's"
      : undefined;
  const server = stack.registries.find((g) => g.model === m.id);
  const items = [
    line({
      id: "gpu-nodes",
      scope: m.id,
      label: `GPU nodes: ${range} × ${m.instanceType} (${m.capacityType})`,
      quantity: { min: m.nodes.min * H, max: m.nodes.max * H },
      unit: "instance-hours",
      key: "ec2",
      price: priced,
      basis: (q, usd) => `${qty(q / H)} nodes × ${H} h × ${money(usd)}/h`,
      note: CAPACITY_NOTE[m.capacityType],
      outsideStack,
    }),
    line({
      id: "gpu-node-volumes",
      scope: m.id,
      label: `GPU node root volumes: ${range} × ${m.nodeDiskGiB} GiB gp3`,
      quantity: { min: m.nodes.min * m.nodeDiskGiB, max: m.nodes.max * m.nodeDiskGiB },
      unit: "GB-months",
      key: "ebsGp3GbMonth",
      price: unitPrice(r, "ebsGp3GbMonth"),
      basis: (q, usd) => `${qty(q)} GB × ${money(usd)}`,
      outsideStack,
    }),
  ];
  if (server) items.push(...registryLine(server, r));
  return items;
}

function registryLine(g: StackCostInput["registries"][number], r: RegionPrices): LineItem[] {
  const gib = (g.sharedBytes + g.keptImages * g.perImageBytes) / GiB;
  return [
    line({
      id: `ecr-${g.id}`,
      scope: g.model ?? "stack",
      label: `ECR ${g.label}: up to ${g.keptImages} kept image(s)`,
      quantity: both(gib),
      unit: "GB-months",
      key: "ecrStorageGbMonth",
      price: unitPrice(r, "ecrStorageGbMonth"),
      basis: (q, usd) => `${qty(q)} GB × ${money(usd)}`,
      note: `the lifecycle's ceiling (shared layers once, ${(g.perImageBytes / GiB).toFixed(2)} GiB per kept image); a new stack holds one image: $${(((g.sharedBytes + g.perImageBytes) / GiB) * unitPrice(r, "ecrStorageGbMonth").usd).toFixed(2)}/month`,
    }),
  ];
}

/** The stack's shared lines: control plane, KMS key, system nodes, NAT and NLB, builders, shared images, the gateway's store. */
export function stackLines(stack: StackCostInput, r: RegionPrices, warnings: string[]): LineItem[] {
  const items: LineItem[] = [];
  const c = stack.cluster;
  if (c.mode === "create") {
    const key = c.support === "extended" ? "eksClusterHourExtendedSupport" : "eksClusterHour";
    items.push(
      line({
        id: "eks-control-plane",
        scope: "stack",
        label: `EKS control plane (${c.support} support)`,
        quantity: both(H),
        unit: "cluster-hours",
        key,
        price: unitPrice(r, key),
        basis: (q, usd) => `${q} h × ${money(usd)}`,
      }),
    );
    const sys = instanceHourly(r, c.systemNodes.instanceType);
    if (!("usd" in sys)) warnings.push(`system nodes: no price for ${c.systemNodes.instanceType} (${sys.missing})`);
    items.push(
      line({
        id: "system-nodes",
        scope: "stack",
        label: `system nodes: ${c.systemNodes.count} × ${c.systemNodes.instanceType}`,
        quantity: both(c.systemNodes.count * H),
        unit: "instance-hours",
        key: "ec2",
        price: "usd" in sys ? sys : undefined,
        basis: (_q, usd) => `${c.systemNodes.count} × ${H} h × ${money(usd)}`,
      }),
      line({
        id: "system-node-volumes",
        scope: "stack",
        label: `system node root volumes: ${c.systemNodes.count} × ${c.systemNodes.diskGiB} GiB gp3`,
        quantity: both(c.systemNodes.count * c.systemNodes.diskGiB),
        unit: "GB-months",
        key: "ebsGp3GbMonth",
        price: unitPrice(r, "ebsGp3GbMonth"),
        basis: (q, usd) => `${q} GB × ${money(usd)}`,
      }),
    );
  }
  if (stack.natGateways > 0) {
    items.push(
      line({
        id: "nat-gateways",
        scope: "stack",
        label: `NAT gateways: ${stack.natGateways}`,
        quantity: both(stack.natGateways * H),
        unit: "gateway-hours",
        key: "natGatewayHour",
        price: unitPrice(r, "natGatewayHour"),
        basis: (_q, usd) => `${stack.natGateways} × ${H} h × ${money(usd)}`,
      }),
      line({
        id: "nat-addresses",
        scope: "stack",
        label: `NAT gateways' public IPv4 addresses: ${stack.natGateways}`,
        quantity: both(stack.natGateways * H),
        unit: "address-hours",
        key: "publicIpv4Hour",
        price: unitPrice(r, "publicIpv4Hour"),
        basis: (_q, usd) => `${stack.natGateways} × ${H} h × ${money(usd)}`,
      }),
    );
  }
  for (const m of stack.models) items.push(...natPullLines(stack, m, r));
  items.push(...loadBalancerLines(stack, r));
  for (const b of stack.builders) items.push(...builderLines(b, r, warnings));
  for (const g of stack.registries.filter((x) => x.model === undefined)) items.push(...registryLine(g, r));
  items.push(...storeLines(stack, r), ...kmsLines(stack, r));
  return items;
}

/**
 * Requests a month at the assumed traffic, every model's pods at one end: the
 * tokens they generate (decode throughput × utilisation) over the tokens a
 * request generates (its maxOutputLen: the fewest requests, so the fewest
 * store operations, the throughput estimate allows).
 */
function requestsPerMonth(stack: StackCostInput, end: "min" | "max"): number {
  let requests = 0;
  for (const m of stack.models) {
    const tps = estimateTokens(m, undefined).tokensPerSecondPerPod.central;
    requests += (m.replicas[end] * tps * stack.traffic.utilisation * 3600 * H) / m.decode.maxOutputLen;
  }
  return requests;
}

/** The gateway's store: the managed cache's data and ECPUs, or the in-cluster store's volume. */
function storeLines(stack: StackCostInput, r: RegionPrices): LineItem[] {
  const s = stack.store;
  if (!s) return [];
  if (s.mode === "inCluster")
    return [
      line({
        id: "store-volume",
        scope: "stack",
        label: `gateway store (in-cluster Valkey): ${s.volumeGiB} GiB volume`,
        quantity: both(s.volumeGiB),
        unit: "GB-months",
        key: "ebsGp3GbMonth",
        price: unitPrice(r, "ebsGp3GbMonth"),
        basis: (q, usd) => `${q} GB × ${money(usd)}`,
        note: "at the gp3 rate: the volume's class is the cluster's default (serving.store.storageClassName)",
      }),
    ];
  const ecpu = (end: "min" | "max") => (requestsPerMonth(stack, end) * s.ecpuPerRequest) / 1e6;
  return [
    line({
      id: "store-data",
      scope: "stack",
      label: `gateway store (ElastiCache Serverless, Valkey): ${s.storedGiB} GB stored`,
      quantity: both(s.storedGiB * H),
      unit: "GB-hours",
      key: "valkeyServerlessGbHour",
      price: unitPrice(r, "valkeyServerlessGbHour"),
      basis: (q, usd) => `${qty(q)} GB-h × ${money(usd)}`,
      note: `the metered minimum (${STORE.minimumGiB} GB): counters and usage hashes take far less`,
    }),
    line({
      id: "store-ecpu",
      scope: "stack",
      label: "gateway store ECPUs at the assumed traffic",
      quantity: { min: ecpu("min"), max: ecpu("max") },
      unit: "million ECPUs",
      key: "valkeyServerlessMillionEcpu",
      price: unitPrice(r, "valkeyServerlessMillionEcpu"),
      basis: (q, usd) => `${qty(q)} M × ${money(usd)}`,
      note: `assumed traffic: requests of maxOutputLen tokens at TRAFFIC.utilisation, ${s.ecpuPerRequest} ECPUs each (cost/assumptions.ts STORE)`,
    }),
  ];
}

/** Customer managed KMS keys: a monthly fee each; their requests are usage-priced and not in the table. */
function kmsLines(stack: StackCostInput, r: RegionPrices): LineItem[] {
  if (stack.kmsKeys === 0) return [];
  return [
    line({
      id: "kms-keys",
      scope: "stack",
      label: `KMS key (EKS secrets encryption): ${stack.kmsKeys}`,
      quantity: both(stack.kmsKeys),
      unit: "key-months",
      key: "kmsKeyMonth",
      price: unitPrice(r, "kmsKeyMonth"),
      basis: (q, usd) => `${q} × ${money(usd)}`,
      note: "yearly rotation: the first two rotations add a key-month each (after 1 and 2 years), not priced; requests are usage-priced and few (the API server caches its data key), not priced",
    }),
  ];
}

/**
 * The NAT bytes of one model's image pulls: the GPU nodes sit in private
 * subnets, so their pulls from ECR go through the stack's NAT gateway, which
 * AWS bills (and a tag report shows) as the stack's.
 */
function natPullLines(stack: StackCostInput, m: ModelCostInput, r: RegionPrices): LineItem[] {
  if (stack.natGateways === 0) return [];
  const imageGiB = (m.image.baseBytes + m.image.weightsBytes) / GiB;
  const pulls = {
    min: m.nodes.min * stack.traffic.pullsPerNodePerMonth,
    max: m.nodes.max * stack.traffic.pullsPerNodePerMonth,
  };
  return [
    line({
      id: `nat-image-pulls-${m.id}`,
      scope: "stack",
      label: `NAT data: ${m.id} server image pulls (${stack.traffic.pullsPerNodePerMonth} per node per month × ${imageGiB.toFixed(1)} GiB)`,
      quantity: { min: pulls.min * imageGiB, max: pulls.max * imageGiB },
      unit: "GB processed",
      key: "natGatewayGb",
      price: unitPrice(r, "natGatewayGb"),
      basis: (q, usd) => `${qty(q)} GB × ${money(usd)}`,
      note: "assumed traffic (cost/assumptions.ts TRAFFIC.pullsPerNodePerMonth)",
    }),
  ];
}

/** NLB hours, capacity units at the assumed traffic, and an internet-facing NLB's public addresses. */
function loadBalancerLines(stack: StackCostInput, r: RegionPrices): LineItem[] {
  // Bytes processed per hour at the assumed utilisation of every model's pods: the NLCU dimension that dominates.
  const lcu = (end: "min" | "max") => {
    let bytesPerHour = 0;
    for (const m of stack.models) {
      const tps = estimateTokens(m, undefined).tokensPerSecondPerPod.central;
      bytesPerHour += m.replicas[end] * tps * stack.traffic.utilisation * stack.traffic.nlbBytesPerToken * 3600;
    }
    return bytesPerHour / NLCU_TCP.bytesPerHour;
  };
  const items = [
    line({
      id: "nlb",
      scope: "stack",
      label: `Network Load Balancer (${stack.loadBalancer.scheme})`,
      quantity: both(H),
      unit: "load-balancer-hours",
      key: "nlbHour",
      price: unitPrice(r, "nlbHour"),
      basis: (q, usd) => `${q} h × ${money(usd)}`,
    }),
    line({
      id: "nlb-lcu",
      scope: "stack",
      label: "NLB capacity units at the assumed traffic",
      quantity: { min: lcu("min") * H, max: lcu("max") * H },
      unit: "NLCU-hours",
      key: "nlbLcuHour",
      price: unitPrice(r, "nlbLcuHour"),
      basis: (q, usd) => `${qty(q / H)} NLCU × ${H} h × ${money(usd)}`,
      note: "assumed traffic: decode throughput × TRAFFIC.utilisation × TRAFFIC.nlbBytesPerToken; 1 NLCU = 1 GB/h for TCP",
    }),
  ];
  if (stack.loadBalancer.publicAddresses > 0)
    items.push(
      line({
        id: "nlb-addresses",
        scope: "stack",
        label: `NLB public IPv4 addresses: ${stack.loadBalancer.publicAddresses}`,
        quantity: both(stack.loadBalancer.publicAddresses * H),
        unit: "address-hours",
        key: "publicIpv4Hour",
        price: unitPrice(r, "publicIpv4Hour"),
        basis: (_q, usd) => `${stack.loadBalancer.publicAddresses} × ${H} h × ${money(usd)}`,
      }),
    );
  return items;
}

/** A builder's month: its volume and address always; its instance hours only when it is never stopped. */
function builderLines(b: StackCostInput["builders"][number], r: RegionPrices, warnings: string[]): LineItem[] {
  const hourly = instanceHourly(r, b.instanceType);
  // A CPU compile host, and a vLLM-only stack's CPU builder, are billed exactly like a GPU builder; only the label differs.
  const what = b.compilesFor ? "compile host" : b.cpu ? "CPU builder" : "builder";
  if (!("usd" in hourly)) warnings.push(`builder ${b.id}: no price for ${b.instanceType} (${hourly.missing})`);
  const items = [
    line({
      id: `builder-${b.id}-volume`,
      scope: "stack",
      label: `${what} (${b.instanceType}): ${b.diskGiB} GiB gp3 root volume`,
      quantity: both(b.diskGiB),
      unit: "GB-months",
      key: "ebsGp3GbMonth",
      price: unitPrice(r, "ebsGp3GbMonth"),
      basis: (q, usd) => `${q} GB × ${money(usd)}`,
    }),
    line({
      id: `builder-${b.id}-iops`,
      scope: "stack",
      label: `${what} (${b.instanceType}): ${b.iops} IOPS (3,000 free)`,
      quantity: both(Math.max(0, b.iops - 3000)),
      unit: "IOPS-months",
      key: "ebsGp3IopsMonth",
      price: unitPrice(r, "ebsGp3IopsMonth"),
      basis: (q, usd) => `${q} × ${money(usd)}`,
    }),
    line({
      id: `builder-${b.id}-throughput`,
      scope: "stack",
      label: `${what} (${b.instanceType}): ${b.throughputMiBps} MB/s (125 free)`,
      quantity: both(Math.max(0, b.throughputMiBps - 125)),
      unit: "MB/s-months",
      key: "ebsGp3ThroughputMonth",
      price: unitPrice(r, "ebsGp3ThroughputMonth"),
      basis: (q, usd) => `${q} × ${money(usd)}`,
    }),
    line({
      id: `builder-${b.id}-address`,
      scope: "stack",
      label: `${what} (${b.instanceType}): Elastic IP`,
      quantity: both(H),
      unit: "address-hours",
      key: "publicIpv4Hour",
      price: unitPrice(r, "publicIpv4Hour"),
      basis: (q, usd) => `${q} h × ${money(usd)}`,
      note: b.stopWhenDone ? `billed while the ${what} is stopped too` : undefined,
    }),
  ];
  if (!b.stopWhenDone)
    items.unshift(
      line({
        id: `builder-${b.id}-instance`,
        scope: "stack",
        label: `${what} (${b.instanceType}): never stopped (build.stopBuilderWhenDone false)`,
        quantity: both(H),
        unit: "instance-hours",
        key: "ec2",
        price: "usd" in hourly ? hourly : undefined,
        basis: (q, usd) => `${q} h × ${money(usd)}`,
      }),
    );
  return items;
}

/** Sum of lines at one end. */
export function total(items: LineItem[], end: "min" | "max"): number {
  return items.reduce((a, i) => a + i.monthlyUsd[end], 0);
}

export { money as formatUsd };
