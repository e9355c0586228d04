// Validates real HTTP answers against the OpenAPI document (server/admin/openapi.ts) with Ajv's
// JSON Schema 2020-12 validator, so the document cannot drift from what the server sends. The
// AdminClient of tests/helpers/admin.ts runs every reply through `checkReply`.
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import { openApiDocument, type Schema } from "../../server/admin/openapi.ts";

const DEFS_ID = "urn:nixmsg:openapi";

type Doc = {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema> };
};
type Operation = {
  responses: Record<string, { content?: Record<string, { schema: Schema }> }>;
};

/** Rewrites `#/components/schemas/X` into references to the registered defs. */
function rewrite(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(rewrite);
  if (typeof value !== "object" || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    out[k] = k === "$ref" && typeof v === "string"
      ? v.replace("#/components/schemas/", `${DEFS_ID}#/$defs/`)
      : rewrite(v);
  }
  return out;
}

/** One documented path as a pattern; fewer parameters first, as literal paths win. */
interface PathEntry {
  template: string;
  pattern: RegExp;
  params: number;
}

class OpenApiChecker {
  readonly doc: Doc;
  readonly #ajv = new Ajv2020({ strict: true, allErrors: true });
  readonly #compiled = new Map<string, ValidateFunction>();
  readonly #paths: PathEntry[];

  constructor() {
    this.doc = openApiDocument() as unknown as Doc;
    this.#ajv.addSchema({ $id: DEFS_ID, $defs: rewrite(this.doc.components.schemas) });
    this.#paths = Object.keys(this.doc.paths).map((template) => {
      const params = (template.match(/\{/g) ?? []).length;
      const source = template.replace(/[.]/g, "\\.").replace(/\{\w+\}/g, "[^/]+");
      return { template, pattern: new RegExp(`^${source}$`), params };
    }).sort((a, b) => a.params - b.params);
  }

  /** The documented path template of a concrete path, or null. */
  templateOf(pathname: string): string | null {
    return this.#paths.find((p) => p.pattern.test(pathname))?.template ?? null;
  }

  #validator(key: string, schema: Schema): ValidateFunction {
    let v = this.#compiled.get(key);
    if (v === undefined) {
      v = this.#ajv.compile(rewrite(schema) as Schema);
      this.#compiled.set(key, v);
    }
    return v;
  }

  #validate(key: string, schema: Schema, value: unknown): string | null {
    const v = this.#validator(key, schema);
    if (v(value)) return null;
    return this.#ajv.errorsText(v.errors, { separator: "; " });
  }

  /** Compiles every response schema (strict mode refuses a malformed one); returns the count. */
  compileAll(): number {
    let n = 0;
    for (const [template, ops] of Object.entries(this.doc.paths)) {
      for (const [m, op] of Object.entries(ops)) {
        for (const [status, response] of Object.entries(op.responses)) {
          for (const [media, entry] of Object.entries(response.content ?? {})) {
            this.#validator(`${m} ${template} ${status} ${media}`, entry.schema);
            n++;
          }
        }
      }
    }
    return n;
  }

  /** null when the answer matches the document, else what is wrong. */
  check(
    method: string,
    pathname: string,
    status: number,
    contentType: string,
    text: string,
  ): string | null {
    const m = method.toLowerCase() === "head" ? "get" : method.toLowerCase();
    const template = this.templateOf(pathname);
    const fallback = (expected: number, code: string): string | null => {
      if (status !== expected) {
        return `${method} ${pathname}: ${status} for an undocumented ${
          template === null ? "path" : "method"
        }`;
      }
      if (method.toUpperCase() === "HEAD") return null;
      return this.#validate(`error:${code}`, {
        allOf: [{ $ref: "#/components/schemas/Error" }],
        type: "object",
        properties: { error: { type: "object", properties: { code: { const: code } } } },
      }, parseJson(text));
    };
    // Not an API path: the console's static files answer there.
    if (template === null && !pathname.startsWith("/api/")) return null;
    if (template === null) return fallback(404, "not_found");
    const op = this.doc.paths[template][m];
    if (op === undefined) return fallback(405, "bad_request");
    const response = op.responses[String(status)];
    if (response === undefined) {
      return `${method} ${template}: status ${status} is not documented (${text.slice(0, 200)})`;
    }
    const content = response.content ?? {};
    if (Object.keys(content).length === 0 || method.toUpperCase() === "HEAD") {
      return text === "" || method.toUpperCase() === "HEAD"
        ? null
        : `${method} ${template} ${status}: a body where none is documented`;
    }
    const media = contentType.split(";")[0].trim().toLowerCase();
    const entry = content[media];
    if (entry === undefined) {
      return `${method} ${template} ${status}: content type ${media} is not documented`;
    }
    const key = `${m} ${template} ${status} ${media}`;
    const values = media === "application/json"
      ? [parseJson(text)]
      : media === "application/x-ndjson"
      ? text.split("\n").filter((l) => l !== "").map(parseJson)
      : media === "text/event-stream"
      // Server-Sent Events: the schema is that of each event's `data` (one JSON line each).
      ? text.split("\n").filter((l) => l.startsWith("data: ")).map((l) => parseJson(l.slice(6)))
      : [text];
    for (const value of values) {
      const problem = this.#validate(key, entry.schema, value);
      if (problem !== null) return `${method} ${template} ${status}: ${problem}`;
    }
    return null;
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return { notJson: text.slice(0, 200) };
  }
}

let shared: OpenApiChecker | null = null;

/** The checker of the current document, built once per test process. */
export function openApiChecker(): OpenApiChecker {
  shared ??= new OpenApiChecker();
  return shared;
}

/** Throws when a real answer does not match the document. */
export function checkReply(
  method: string,
  url: string,
  status: number,
  contentType: string,
  text: string,
): void {
  const problem = openApiChecker().check(method, new URL(url).pathname, status, contentType, text);
  if (problem !== null) throw new Error(`OpenAPI mismatch: ${problem}`);
}
