// The SDK's error checks for the integration tests (the built package's NixMsgError).
import * as pkg from "@nixevol/nixmsg";
import { errorChecks } from "./error_codes.ts";

export const { code, codeOf } = errorChecks(pkg);
