/**
 * Most bytes of frames published in one event-loop turn. Browser WebSocket streams join all
 * writes of a turn into one WebSocket message, and the server accepts messages of at most
 * max_frame_bytes + 1 KiB; a replay of many large sends after a reconnect must not exceed that.
 */
export const TURN_BYTES = 512 * 1024;

const utf8 = new TextEncoder();

/** Upper bound of a string's UTF-8 size; exact for long strings. */
function byteSize(text: string): number {
  return text.length <= 1024 ? text.length * 3 : utf8.encode(text).length;
}

/**
 * Frames waiting to be published, in order, at most {@link TURN_BYTES} per event-loop turn (a
 * single larger frame still goes alone).
 */
export class Outbox {
  #queue: string[] = [];
  #turnBytes = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  readonly #limit: number;
  readonly #write: (json: string) => void;

  constructor(write: (json: string) => void, limit = TURN_BYTES) {
    this.#write = write;
    this.#limit = limit;
  }

  /** Frames not written yet. */
  get pending(): number {
    return this.#queue.length;
  }

  /** Queues a frame and writes what this turn allows. */
  push(json: string): void {
    this.#queue.push(json);
    this.#flush();
  }

  /** Drops everything unwritten and cancels the next turn. */
  clear(): void {
    this.#queue.length = 0;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#turnBytes = 0;
  }

  #flush(): void {
    while (this.#queue.length > 0) {
      const json = this.#queue[0] as string;
      const size = byteSize(json);
      if (this.#turnBytes > 0 && this.#turnBytes + size > this.#limit) break;
      this.#queue.shift();
      this.#turnBytes += size;
      this.#write(json);
    }
    if (this.#timer === undefined && this.#turnBytes > 0) {
      this.#timer = setTimeout(() => {
        this.#timer = undefined;
        this.#turnBytes = 0;
        this.#flush();
      }, 0);
    }
  }
}
