/**
 * An expected failure of a writer op, carrying a spec error code (spec 6.10) such as
 * `id_taken` or `conflict`, and optional JSON-able data. It crosses the Worker boundary
 * intact; any other error thrown by an op becomes `busy` on the main thread.
 *
 * @example
 * ```ts
 * throw new OpError("conflict", { state: "accepted" });
 * ```
 */
export class OpError extends Error {
  readonly code: string;
  readonly data?: Record<string, unknown>;

  constructor(
    code: string,
    data?: Record<string, unknown>,
    message?: string,
    options?: ErrorOptions,
  ) {
    super(message ?? code, options);
    this.name = "OpError";
    this.code = code;
    this.data = data;
  }
}
