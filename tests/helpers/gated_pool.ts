// A real argon2 pool whose password checks can be held at a gate. With the gate closed, every
// check the server starts is in flight at once, the worst case for the lockouts (issue 18), and
// the test sees exactly how many checks the server let through.
import { PasswordPool } from "../../server/auth/password_pool.ts";
import { TEST_POOL_PARAMS } from "./test_server.ts";

const WAIT_MS = 10_000;

/** A {@linkcode PasswordPool} with a gate in front of `verify`; open until {@link close}d. */
export class GatedPool extends PasswordPool {
  /** Checks that reached the gate so far. */
  entered = 0;
  #gate: Promise<void> | null = null;
  #release: () => void = () => {};
  readonly #watchers = new Set<() => void>();

  constructor() {
    super({ params: TEST_POOL_PARAMS });
  }

  override async verify(phc: string, password: string): Promise<boolean> {
    this.entered++;
    this.poke();
    if (this.#gate !== null) await this.#gate;
    return super.verify(phc, password);
  }

  /** Holds every later check until {@link open}. */
  close(): void {
    if (this.#gate === null) this.#gate = new Promise((resolve) => (this.#release = resolve));
  }

  /** Lets every held and later check run. */
  open(): void {
    this.#gate = null;
    this.#release();
  }

  /** Re-evaluates the conditions of pending {@link until} calls; call it on outside events too. */
  poke(): void {
    for (const w of [...this.#watchers]) w();
  }

  /** Resolves once `check()` holds, re-checked on every check at the gate and every `poke()`. */
  until(check: () => boolean, what: string): Promise<void> {
    if (check()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#watchers.delete(w);
        reject(new Error(`timed out waiting for ${what} (${this.entered} checks at the gate)`));
      }, WAIT_MS);
      const w = () => {
        if (!check()) return;
        clearTimeout(timer);
        this.#watchers.delete(w);
        resolve();
      };
      this.#watchers.add(w);
    });
  }
}
