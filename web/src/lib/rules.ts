/** Field rules shared by the endpoint forms (docs/admin-api.md, Endpoints: field rules). */
import type { FormItemRule } from "naive-ui";

const ID = /^[A-Za-z0-9_.-]*$/;

function rule(check: (v: string) => string | null, trigger = ["blur", "input"]): FormItemRule {
  return {
    trigger,
    validator: (_r: FormItemRule, value: unknown) => {
      const problem = check(typeof value === "string" ? value : "");
      return problem === null ? true : new Error(problem);
    },
  };
}

const chars = (v: string) => [...v].length;

/** An endpoint or group id; empty means "generate one". */
export const idRule = rule((v) => {
  if (chars(v) > 64) return "编号最多 64 个字符";
  return ID.test(v) ? null : "编号只能用字母、数字和 _ . -";
});

/** Text of at most `max` characters. */
export function maxRule(max: number, what: string): FormItemRule {
  return rule((v) => (chars(v) > max ? `${what}最多 ${max} 个字符` : null));
}

/** Required text of at most `max` characters. */
export function requiredRule(max: number, what: string): FormItemRule {
  return rule((v) => {
    if (v.trim() === "") return `请填写${what}`;
    return chars(v) > max ? `${what}最多 ${max} 个字符` : null;
  });
}

/** A login password; empty means "generate one" when `optional`. */
export function loginPasswordRule(optional: boolean): FormItemRule {
  return rule((v) => {
    if (v === "") return optional ? null : "请填写登录密码";
    if (chars(v) < 8 || chars(v) > 128) return "登录密码需要 8 到 128 个字符";
    return v.startsWith("nst_") ? "登录密码不能以 nst_ 开头" : null;
  });
}

/** The admin password (spec 8: 12 to 128 characters). */
export const adminPasswordRule = rule((v) =>
  chars(v) < 12 || chars(v) > 128 ? "管理员密码需要 12 到 128 个字符" : null
);
