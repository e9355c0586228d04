/**
 * TypeBox builders for the HTTP API's JSON shapes (issue 32 "one schema per shape"). Each keeps
 * the JSON Schema the hand-written OpenAPI document had (`type: ["integer", "null"]`, a plain
 * `enum`, closed objects), while `Static<typeof X>` gives the TypeScript type of the same shape.
 */
import { type TProperties, Type } from "@sinclair/typebox";

export const str = Type.String();
export const int = Type.Integer();
export const nonNegInt = Type.Integer({ minimum: 0 });
export const bool = Type.Boolean();
export const timeMs = Type.Integer({ description: "Unix milliseconds" });
export const timeOrNull = Type.Unsafe<number | null>({
  type: ["integer", "null"],
  description: "Unix milliseconds or null",
});
export const numOrNull = Type.Unsafe<number | null>({ type: ["number", "null"] });

/** One of `values`, as a plain `enum`. */
export function oneOf<const T extends readonly string[]>(values: T) {
  return Type.Unsafe<T[number]>({ enum: [...values] });
}

/** A closed object: every property required, nothing else allowed. */
export function closed<P extends TProperties>(properties: P) {
  return Type.Object(properties, { additionalProperties: false });
}

/** A reference to a component schema of the document, typed as `T`. */
export function ref<T>(name: string) {
  return Type.Unsafe<T>({ $ref: `#/components/schemas/${name}` });
}

/** An object of any keys whose values are non-negative integers. */
export const countsByKey = Type.Unsafe<Record<string, number>>({
  type: "object",
  additionalProperties: { type: "integer", minimum: 0 },
});
