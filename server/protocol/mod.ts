/**
 * The application frame layer of spec 6: frame types, parsing and validation, the error
 * catalogue, the request fingerprint and serialization. Pure code, no I/O.
 *
 * @example
 * ```ts
 * import { encodeResp, errResp, okResp, parseRequest } from "../protocol/mod.ts";
 * const parsed = parseRequest(payload, config.limits);
 * if (!parsed.ok) {
 *   publish(encodeResp(errResp(parsed.rid ?? "", parsed.error), maxReceive));
 *   return;
 * }
 * ```
 */
export * from "./errors.ts";
export type * from "./frames.ts";
export { isRequestType, parseRequest, type ParseResult, REQUEST_TYPES } from "./parse.ts";
export { resolveSendAt, SEND_FIELDS } from "./parse_send.ts";
export { ID_PATTERN, isValidId, unknownField } from "./fields.ts";
export * from "./limits.ts";
export { base64DecodedLength, decodeBodyData, encodeBodyData } from "./body.ts";
export { FINGERPRINT_FORMAT, requestFingerprint, sameFingerprint } from "./fingerprint.ts";
export * from "./serialize.ts";
export { checkBodySize, checkFrameSize } from "./local_checks.ts";
export { charCount, utf8Length } from "./text.ts";
