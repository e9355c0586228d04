import { charCount, isValidId } from "../protocol/mod.ts";
import { isSessionToken } from "../auth/tokens.ts";

// Field rules for a new endpoint, shared by registration (spec 6.9) and admin provisioning
// (spec 8). PRD F01 is not available to us; these are the rules we chose (docs/DEVIATIONS.md).

/** Login passwords: 8 to 128 characters, never starting with `nst_` (spec 5). */
export function loginPasswordProblem(pw: string): string | null {
  if (charCount(pw) < 8 || charCount(pw) > 128) return "登录密码需要 8 到 128 个字符";
  if (isSessionToken(pw)) return "登录密码不能以 nst_ 开头";
  return null;
}

/** The fields of a new endpoint; empty id or password means "generate one". */
export interface NewEndpointFields {
  id: string;
  loginPassword: string;
  name: string;
  talkPassword: string;
}

/** Returns a Chinese message naming the first bad field, or null when all are valid. */
export function validateNewEndpoint(f: NewEndpointFields): string | null {
  if (f.id !== "" && !isValidId(f.id)) {
    return "编号需要 1 到 64 个字符，只能用字母、数字、_ . -";
  }
  if (f.loginPassword !== "") {
    const p = loginPasswordProblem(f.loginPassword);
    if (p) return p;
  }
  if (charCount(f.name) > 64) return "名称最多 64 个字符";
  if (charCount(f.talkPassword) > 128) return "对话密码最多 128 个字符";
  return null;
}
