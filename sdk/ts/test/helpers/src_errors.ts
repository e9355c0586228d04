// The SDK's error checks for the unit tests (the sources' NixMsgError).
import * as src from "../../src/errors.ts";
import { errorChecks } from "./error_codes.ts";

export const { code, codeOf } = errorChecks(src);
