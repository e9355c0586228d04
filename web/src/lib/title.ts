/** The browser tab's title: the page's own title, then the console's name. */
export const CONSOLE_NAME = "NixMsg 管理后台";

/** `"端 door-1 - NixMsg 管理后台"`; just the console's name for "". */
export function tabTitle(page: string): string {
  return page === "" ? CONSOLE_NAME : `${page} - ${CONSOLE_NAME}`;
}

/** Sets the tab's title for `page`. */
export function setTitle(page: string): void {
  const doc = (globalThis as { document?: { title: string } }).document;
  if (doc !== undefined) doc.title = tabTitle(page);
}
