/**
 * Turns Triton's cumulative texts into deltas a client may see, without
 * tokenizing: postprocessing decodes every generated token so far in each
 * streamed response (the one tokenizer lives in the server image), and the
 * gateway only compares strings.
 *
 * Guarantees, for every sequence of updates:
 * - text already sent is never changed: a delta is emitted only when the new
 *   text extends what was sent;
 * - no broken UTF-8: a token that ends inside a multi-byte character decodes
 *   to U+FFFD at the end of the text, and trailing U+FFFD is held back until
 *   a later update completes the character (or the generation ends);
 * - OpenAI `stop` semantics: the output ends before the first occurrence of
 *   any stop sequence, and a tail that could still become one is held back.
 */

const REPLACEMENT = "\uFFFD";

export interface TextUpdate {
  /** New text to send (may be empty). */
  delta: string;
  /** A stop sequence was found: the output is complete. */
  stopped: boolean;
}

export class IncrementalText {
  private sent = "";
  private stoppedAt: number | undefined;
  private leading = true;

  constructor(
    private readonly stop: readonly string[] = [],
    /** Chat replies drop the whitespace the model puts after the assistant prefix. */
    private readonly trimStart = false,
  ) {}

  /** Everything sent so far. */
  get text(): string {
    return this.sent;
  }

  get stopped(): boolean {
    return this.stoppedAt !== undefined;
  }

  /** Feed the cumulative text of the newest response. */
  update(cumulative: string): TextUpdate {
    if (this.stopped) return { delta: "", stopped: true };
    let text = this.normalise(cumulative);
    const stopIndex = this.firstStop(text);
    if (stopIndex !== undefined) {
      this.stoppedAt = stopIndex;
      return { delta: this.advance(text.slice(0, stopIndex)), stopped: true };
    }
    let end = text.length;
    while (end > 0 && text[end - 1] === REPLACEMENT) end--;
    text = text.slice(0, end);
    return { delta: this.advance(text.slice(0, text.length - this.heldBackTail(text))), stopped: false };
  }

  /** The generation ended: release what was held back (an unfinished stop prefix, a final U+FFFD). */
  finish(cumulative: string): TextUpdate {
    if (this.stopped) return { delta: "", stopped: true };
    const text = this.normalise(cumulative);
    const stopIndex = this.firstStop(text);
    if (stopIndex !== undefined) {
      this.stoppedAt = stopIndex;
      return { delta: this.advance(text.slice(0, stopIndex)), stopped: true };
    }
    return { delta: this.advance(text), stopped: false };
  }

  private normalise(cumulative: string): string {
    if (!this.trimStart) return cumulative;
    const trimmed = cumulative.trimStart();
    if (trimmed !== "") this.leading = false;
    return this.leading ? "" : trimmed;
  }

  private firstStop(text: string): number | undefined {
    let best: number | undefined;
    for (const s of this.stop) {
      const i = text.indexOf(s);
      if (i >= 0 && (best === undefined || i < best)) best = i;
    }
    return best;
  }

  /** Length of the longest tail of `text` that is a proper prefix of a stop sequence. */
  private heldBackTail(text: string): number {
    let hold = 0;
    for (const s of this.stop) {
      for (let n = Math.min(s.length - 1, text.length); n > hold; n--) {
        if (text.endsWith(s.slice(0, n))) {
          hold = n;
          break;
        }
      }
    }
    return hold;
  }

  private advance(visible: string): string {
    if (visible.length <= this.sent.length || !visible.startsWith(this.sent)) return "";
    const delta = visible.slice(this.sent.length);
    this.sent = visible;
    return delta;
  }
}
