/** The server version reported by `nixmsg version` and the `hello` response (spec 6.1). */
export const VERSION = "0.1.0";
