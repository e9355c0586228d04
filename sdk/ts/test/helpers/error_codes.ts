// Checks that an error is the SDK's own: a NixMsgError whose code is one of the exported ErrorCode
// constants. Parameterized by the module under test: the integration tests use the built package,
// the unit tests the sources (two different NixMsgError classes).
import assert from "node:assert/strict";

interface ErrorModule {
  ErrorCode: Readonly<Record<string, string>>;
  NixMsgError: abstract new (...args: never[]) => Error & { code: string };
}

/**
 * `code(c)` is an `assert.rejects` / `assert.throws` validator: the error is a NixMsgError of
 * code `c`, and `c` is an ErrorCode constant. `codeOf(e)` is the code of such an error (for
 * collecting the outcomes of several calls).
 */
export function errorChecks<M extends ErrorModule>(m: M) {
  type Code = M["ErrorCode"][keyof M["ErrorCode"]];
  const codes = new Set<string>(Object.values(m.ErrorCode));
  const codeOf = (e: unknown): string => {
    assert.ok(e instanceof m.NixMsgError, `a NixMsgError, got ${String(e)}`);
    assert.ok(codes.has(e.code), `${e.code} is an ErrorCode constant`);
    return e.code;
  };
  const code = (c: Code) => (e: unknown): true => {
    assert.equal(codeOf(e), c);
    return true;
  };
  return { code, codeOf };
}
