/**
 * The error catalogue of spec 6.10: every client-visible code with its HTTP status and the
 * default message. One renderer (`errResp` in serialize.ts) turns these into responses.
 */

/** Facts about one error code. */
export interface ErrorInfo {
  /** HTTP status used when the code is returned by an HTTP API (spec 6.9). */
  readonly status: number;
  /** Default message, written for developers (spec 6: SDKs branch on `code`, not on this). */
  readonly message: string;
}

/** The catalogue. The HTTP statuses of spec 6.9 are fixed; the others follow HTTP meaning. */
const CATALOGUE = {
  bad_request: { status: 400, message: "字段不合法" },
  not_ready: { status: 409, message: "还没握手" },
  unauthorized: { status: 401, message: "身份校验失败" },
  forbidden: { status: 403, message: "没有权限" },
  not_found: { status: 404, message: "消息、群或编号不存在" },
  invalid_target: { status: 404, message: "发送目标不存在" },
  conflict: { status: 409, message: "消息号相同但请求内容不同" },
  id_taken: { status: 409, message: "编号已存在" },
  body_too_large: { status: 413, message: "正文超限" },
  meta_too_large: { status: 413, message: "自定义字段超限" },
  frame_too_large: { status: 413, message: "整帧超过 max_frame_bytes" },
  response_too_large: {
    status: 413,
    message: "响应超过本连接声明的接收上限，换小一点的分页再查",
  },
  talk_password_required: { status: 403, message: "需要对话密码" },
  talk_password_invalid: { status: 403, message: "对话密码错误" },
  rate_limited: { status: 429, message: "请求过快，或因多次输错被临时锁定" },
  not_member: { status: 403, message: "不是群成员" },
  owner_cannot_leave: { status: 403, message: "群主不能直接退出" },
  group_full: { status: 409, message: "超过成员上限" },
  quota_exceeded: { status: 429, message: "自己未完成的消息已达上限" },
  endpoint_disabled: { status: 403, message: "对方已停用" },
  registration_closed: { status: 403, message: "注册未开启" },
  registration_code_invalid: { status: 403, message: "注册安全码错误" },
  busy: { status: 503, message: "服务器忙，可重试" },
} as const satisfies Record<string, ErrorInfo>;

/** Every error code of spec 6.10. */
export type ErrorCode = keyof typeof CATALOGUE;

/** All error codes, in the order of spec 6.10. */
export const ERROR_CODES: readonly ErrorCode[] = Object.freeze(
  Object.keys(CATALOGUE) as ErrorCode[],
);

/**
 * An error with protocol meaning. Thrown or returned by protocol and app code, rendered to the
 * client by `errResp`.
 *
 * @example
 * ```ts
 * throw new ProtocolError("not_member");
 * throw new ProtocolError("bad_request", "字段不合法：limit 必须是 1–200 的整数");
 * ```
 */
export class ProtocolError extends Error {
  /** The spec 6.10 code the client branches on. */
  readonly code: ErrorCode;
  /** Optional structured details, rendered as `error.data`. */
  readonly data?: Record<string, unknown>;

  /** `message` defaults to the catalogue message of `code`. */
  constructor(code: ErrorCode, message?: string, data?: Record<string, unknown>) {
    super(message ?? CATALOGUE[code].message);
    this.name = "ProtocolError";
    this.code = code;
    if (data !== undefined) this.data = data;
  }
}

/** Returns true when `value` is one of the spec 6.10 codes. */
export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === "string" && Object.hasOwn(CATALOGUE, value);
}

/**
 * Returns the HTTP status and default message of an error code.
 *
 * @example
 * ```ts
 * errorInfo("rate_limited"); // { status: 429, message: "请求过快，或因多次输错被临时锁定" }
 * ```
 */
export function errorInfo(code: ErrorCode): ErrorInfo {
  return CATALOGUE[code];
}

/**
 * Maps anything caught to a client-safe error: a `ProtocolError` stays as it is, anything else
 * becomes `busy` so that no stack trace or internal message reaches a client (STYLE 4).
 */
export function toProtocolError(error: unknown): ProtocolError {
  return error instanceof ProtocolError ? error : new ProtocolError("busy");
}
