/**
 * The Triton calls of one request, one per prompt, opened while admission
 * decides (`app.admit`'s `meanwhile`): with the shared store that is a round
 * trip, and setting up the calls' HTTP/2 streams in it takes their cost off
 * the time to first token. A call only carries a request once the request
 * is admitted (`take`, then `send`); the rest are abandoned when the request
 * ends, so Triton runs nothing for a refused request.
 */
import type { TritonClient, UpstreamCall } from "./tritonClient";

export class OpenedCalls {
  private readonly calls: Array<UpstreamCall | undefined>;

  constructor(
    private readonly triton: TritonClient,
    count: number,
    private readonly timeoutSeconds: number,
  ) {
    this.calls = Array.from({ length: count }, () => undefined);
  }

  /**
   * The calls' deadline: the request's timeout from now. Opened before the
   * request's own timer starts (RequestContext, after admission), so it falls
   * at most one admission earlier; the timer still decides the answer.
   */
  private deadline(): number {
    return Date.now() + this.timeoutSeconds * 1000;
  }

  /** Open every call not open yet. */
  open(): void {
    const deadline = this.deadline();
    for (let i = 0; i < this.calls.length; i++) this.calls[i] ??= this.triton.open(deadline);
  }

  /** The call for prompt `i`, opened now if it is not yet. */
  take(i: number): UpstreamCall {
    const call = this.calls[i] ?? this.triton.open(this.deadline());
    this.calls[i] = call;
    return call;
  }

  /** Close every call that carried no request (a no-op for the others). */
  abandonUnused(): void {
    for (const call of this.calls) call?.abandon();
  }
}
