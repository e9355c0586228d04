/**
 * A small RFC 4180 CSV reader for the endpoint import (spec 8): UTF-8 with an optional BOM,
 * `,` between fields, CRLF or LF between records, `"…"` quoting with `""` for a quote.
 */

/** One record and the 1-based record number it has in the file (header = 1). */
export interface CsvRecord {
  readonly row: number;
  readonly fields: string[];
}

/** A CSV file that cannot be read at all; `row` is the record where reading stopped. */
export class CsvError extends Error {
  readonly row: number;

  constructor(row: number, message: string) {
    super(message);
    this.name = "CsvError";
    this.row = row;
  }
}

/**
 * Decodes `bytes` as UTF-8 (a leading BOM is dropped) and splits it into records. Completely
 * empty lines are skipped but still counted, so `row` matches what a spreadsheet shows.
 *
 * @throws {CsvError} on invalid UTF-8, a quote inside an unquoted field, text after a closing
 * quote, or an unterminated quoted field.
 *
 * @example
 * ```ts
 * parseCsv(new TextEncoder().encode('id,name\r\na,"b, c"\r\n'));
 * // [{ row: 1, fields: ["id", "name"] }, { row: 2, fields: ["a", "b, c"] }]
 * ```
 */
export function parseCsv(bytes: Uint8Array): CsvRecord[] {
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    throw new CsvError(1, "文件不是 UTF-8 编码");
  }
  const out: CsvRecord[] = [];
  let row = 1;
  let fields: string[] = [];
  let field = "";
  let quoted = false;
  let afterQuote = false;
  let i = 0;
  const endRecord = () => {
    fields.push(field);
    if (!(fields.length === 1 && fields[0] === "" && !afterQuote)) out.push({ row, fields });
    row++;
    fields = [];
    field = "";
    afterQuote = false;
  };
  while (i < text.length) {
    const c = text[i];
    if (quoted) {
      if (c === '"') {
        if (text[i + 1] === '"') {
          field += '"';
          i += 2;
          continue;
        }
        quoted = false;
        afterQuote = true;
      } else {
        field += c;
      }
      i++;
      continue;
    }
    if (c === ",") {
      fields.push(field);
      field = "";
      afterQuote = false;
    } else if (c === "\r" && text[i + 1] === "\n") {
      endRecord();
      i++;
    } else if (c === "\n" || c === "\r") {
      endRecord();
    } else if (afterQuote) {
      throw new CsvError(row, "引号后面只能是逗号或换行");
    } else if (c === '"') {
      if (field !== "") throw new CsvError(row, "未加引号的字段里不能有引号");
      quoted = true;
    } else {
      field += c;
    }
    i++;
  }
  if (quoted) throw new CsvError(row, "引号没有闭合");
  if (field !== "" || fields.length > 0 || afterQuote) endRecord();
  return out;
}
