/** Quantity strings as Kubernetes and Pulumi want them, from the plan's plain numbers. */
const MiB = 1024 ** 2;

/** Kubernetes quantity strings: whole MiB for memory, millicores for CPU. */
export function mebibytes(bytes: number): string {
  return `${Math.ceil(bytes / MiB)}Mi`;
}
export function millicores(m: number): string {
  return `${m}m`;
}
/** Pulumi custom timeouts: whole minutes, rounded up. */
export function minutes(seconds: number): string {
  return `${Math.ceil(seconds / 60)}m`;
}
