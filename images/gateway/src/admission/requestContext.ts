/**
 * Per-request state of a generation: who asked, for which model, the deadline, the abort
 * signal (a timeout, or a client disconnect when the model can cancel; either
 * cancels the Triton call) and the bookkeeping that ends in metrics and one log line.
 */
import type { FastifyBaseLogger } from "fastify";
import type { Consumer, GatewayConfig } from "../config";
import { ApiError, timedOut } from "../server/apiError";
import type { GatewayMetrics } from "../telemetry/metrics";
import type { ServedModel } from "../models/modelRouter";
import type { TritonClient } from "../triton/tritonClient";
import type { Build } from "../canary/weightedSplit";
import { BUILD_HEADER } from "../canary/canaryRoute";

export interface Outcome {
  promptTokens: number;
  completionTokens: number;
}

/** Longest a response waits for what its request held to be given back (a store round trip is ~0.3 ms). */
export const FINISH_WAIT_MS = 250;

export class RequestContext {
  readonly started = performance.now();
  readonly deadline: number;
  private readonly controller = new AbortController();
  private readonly timer: NodeJS.Timeout;
  private firstTokenAt: number | undefined;
  private done = false;
  private answered = false;
  /** The client left before the response was complete. */
  abandoned = false;
  /**
   * The response is already an open event stream (status 200 sent): the
   * request was held while its model woke, with keepalives. Its errors are
   * then error events, not statuses.
   */
  streamOpen = false;
  /** Stops the held stream's keepalive comments: called before its first event. */
  stopKeepalive: () => void = () => undefined;
  private readonly finishHooks: Array<(outcome: Outcome) => void | Promise<void>> = [];
  /** The finish hooks' results, once they have run (at most once: generationComplete or finished). */
  private finishing: Array<void | Promise<void>> | undefined;
  outcome: Outcome | undefined;
  /** The status of a server-side failure (5xx) the request ended in, answered or mid-stream; the canary's rule counts it. */
  serverFailure: number | undefined;
  /** The Triton of the build that serves this request, for its whole life (retries included). */
  readonly triton: TritonClient;

  constructor(
    readonly requestId: string,
    readonly route: string,
    readonly consumer: Consumer,
    readonly config: GatewayConfig,
    readonly model: ServedModel,
    readonly metrics: GatewayMetrics,
    private readonly log: FastifyBaseLogger,
    /** The build picked for it (canary/weightedSplit.ts); `stable` for a model without a canary. */
    readonly build: Build = "stable",
  ) {
    this.triton = build === "canary" && model.canary ? model.canary.triton : model.triton;
    const seconds = config.limits.requestTimeoutSeconds;
    this.deadline = Date.now() + seconds * 1000;
    this.timer = setTimeout(() => this.abort(timedOut(seconds), "timeout"), seconds * 1000);
    this.timer.unref();
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /**
   * The client went away before the response was complete. A model that can
   * cancel is cancelled; any other runs its generation to the end upstream
   * (nothing more is forwarded), and the request holds what it took until then.
   */
  clientGone(): void {
    if (this.done) return;
    this.abandoned = true;
    if (this.model.config.cancellable) {
      this.abort("client disconnected", "client_disconnect");
      return;
    }
    this.log.info(
      { requestId: this.requestId, consumer: this.consumer.name, model: this.model.config.id, build: this.build },
      "client gone; the generation runs to its end upstream (the model cannot cancel), its slots held until then",
    );
  }

  /** Triton answered the request (its first response): it reached the model, and usage counts it. */
  reachedModel(): void {
    this.answered = true;
  }

  get hasReachedModel(): boolean {
    return this.answered || this.outcome !== undefined;
  }

  private abort(reason: ApiError | string, label: string): void {
    if (this.done || this.controller.signal.aborted) return;
    this.metrics.upstreamCancelled.inc({ reason: label, model: this.model.config.id, build: this.build });
    this.log.info(
      {
        requestId: this.requestId,
        consumer: this.consumer.name,
        model: this.model.config.id,
        build: this.build,
        reason: label,
      },
      "generation cancelled",
    );
    this.controller.abort(reason);
  }

  firstToken(): void {
    if (this.firstTokenAt !== undefined) return;
    this.firstTokenAt = performance.now();
    const seconds = (this.firstTokenAt - this.started) / 1000;
    // Observed once the first chunk is on its way (the socket is written at the end of this turn): the
    // histogram's label lookup is not part of the time to first token it measures (issue 33, item 7).
    setImmediate(() =>
      this.metrics.timeToFirstToken.observe(
        { route: this.route, consumer: this.consumer.name, model: this.model.config.id, build: this.build },
        seconds,
      ),
    );
  }

  /** Seconds from arrival to the first generated text; undefined while (or if) none came. */
  get ttftSeconds(): number | undefined {
    return this.firstTokenAt === undefined ? undefined : (this.firstTokenAt - this.started) / 1000;
  }

  /** The header naming the build that answers, for a model with a canary (none for the others). */
  get buildHeader(): Record<string, string> {
    return this.model.canary ? { [BUILD_HEADER]: this.build } : {};
  }

  /** The series labels of this request's model and build. */
  get labels(): { consumer: string; model: string; build: Build } {
    return { consumer: this.consumer.name, model: this.model.config.id, build: this.build };
  }

  /**
   * Run `hook` when the generation is complete, before the last bytes reach
   * the client: what the request held (a concurrency permit in the shared
   * store) is given back before the client can send its next request.
   */
  onFinished(hook: (outcome: Outcome) => void | Promise<void>): void {
    this.finishHooks.push(hook);
  }

  /**
   * The model has generated all it can (every copy at max_tokens) and
   * `outcome` is the request's final usage, but Triton's stream has yet to
   * end: the finish hooks run now, so the store's release overlaps that end
   * instead of following it; finished() still waits for them before the
   * response's last bytes.
   */
  generationComplete(outcome: Outcome): void {
    this.finishing ??= this.finishHooks.map((hook) => hook({ ...outcome }));
  }

  /**
   * The generation is complete: the hooks run (unless generationComplete ran them), and the caller awaits them (at
   * most FINISH_WAIT_MS: a store that does not answer never holds a response)
   * before it writes the response's last bytes, so a client's next request,
   * on any gateway pod, finds what this one held given back.
   */
  async finished(outcome: Outcome): Promise<void> {
    this.outcome = outcome;
    this.close();
    this.finishing ??= this.finishHooks.map((hook) => hook(outcome));
    const pending = this.finishing;
    const labels = this.labels;
    this.metrics.promptTokens.inc(labels, outcome.promptTokens);
    this.metrics.outputTokens.inc(labels, outcome.completionTokens);
    const from = this.firstTokenAt ?? this.started;
    const seconds = (performance.now() - from) / 1000;
    if (outcome.completionTokens > 1 && seconds > 0) {
      // Tokens after the first over the time after the first: the decode rate, free of queueing and prefill.
      this.metrics.outputTokensPerSecond.observe(
        { route: this.route, ...labels },
        (outcome.completionTokens - 1) / seconds,
      );
    }
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all(pending),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, FINISH_WAIT_MS);
      }),
    ]);
    clearTimeout(timer);
  }

  /**
   * Triton's stream failed after every choice had ended at max_tokens (generate.ts ends them before
   * the stream's final status): the client has its whole answer, so the failure is logged, not sent.
   */
  failedAfterEnd(error: unknown): void {
    this.log.warn(
      { requestId: this.requestId, model: this.model.config.id, build: this.build, err: error },
      "Triton's stream failed after the generation had ended; the response was already complete",
    );
  }

  failedMidStream(error: unknown): void {
    this.close();
    const e = error instanceof ApiError ? error : undefined;
    const status = e?.status ?? 500;
    if (status >= 500) this.serverFailure = status;
    this.metrics.errors.inc({ status: String(status), code: e?.code ?? "stream_failed", ...this.labels });
    this.log.warn({ requestId: this.requestId, ...this.labels, error: String(error) }, "stream failed");
  }

  close(): void {
    this.done = true;
    clearTimeout(this.timer);
  }
}
