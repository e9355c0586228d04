/** Writing CSV (RFC 4180) for the import template and the one-time password download. */

/** The header the import expects (spec 8). */
export const IMPORT_HEADER = [
  "id",
  "name",
  "login_password",
  "talk_password",
  "default_delay_seconds",
  "remark",
] as const;

function field(value: string): string {
  return /[",\r\n]/.test(value) ? `"${value.replaceAll('"', '""')}"` : value;
}

/**
 * Formats rows as CSV with CRLF line ends and a UTF-8 BOM, so spreadsheet programs read the
 * Chinese text correctly.
 */
export function toCsv(rows: readonly (readonly string[])[]): string {
  return "\uFEFF" + rows.map((r) => r.map(field).join(",")).join("\r\n") + "\r\n";
}
