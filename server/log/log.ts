import type { LogLevel } from "../config/types.ts";

/** Structured fields of one log line. Never put bodies, passwords, tokens or codes here (spec 12). */
export type LogFields = Record<string, string | number | boolean | null | undefined>;

const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

/** A JSON-lines logger writing to stdout. */
export class Logger {
  #min: number;
  #base: LogFields;
  #write: (line: string) => void;

  constructor(level: LogLevel = "info", base: LogFields = {}, write?: (line: string) => void) {
    this.#min = ORDER[level];
    this.#base = base;
    this.#write = write ?? ((line) => console.log(line));
  }

  /** A logger that adds `fields` to every line. */
  with(fields: LogFields): Logger {
    const child = new Logger("debug", { ...this.#base, ...fields }, this.#write);
    child.#min = this.#min;
    return child;
  }

  debug(msg: string, fields?: LogFields): void {
    this.#log("debug", msg, fields);
  }
  info(msg: string, fields?: LogFields): void {
    this.#log("info", msg, fields);
  }
  warn(msg: string, fields?: LogFields): void {
    this.#log("warn", msg, fields);
  }
  error(msg: string, fields?: LogFields): void {
    this.#log("error", msg, fields);
  }

  #log(level: LogLevel, msg: string, fields?: LogFields): void {
    if (ORDER[level] < this.#min) return;
    const line = { time: new Date().toISOString(), level, msg, ...this.#base, ...fields };
    this.#write(JSON.stringify(line));
  }
}

/** A logger that discards everything; for tests and CLI commands. */
export const silentLogger = new Logger("error", {}, () => {});
