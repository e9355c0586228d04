/**
 * Copies text to the clipboard. The Clipboard API exists only in secure contexts (HTTPS or
 * localhost); a console opened over plain HTTP on a LAN address falls back to a hidden textarea
 * and `execCommand("copy")`. Resolves false when neither works.
 */
export async function copyText(text: string): Promise<boolean> {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    const area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.style.position = "fixed";
    area.style.opacity = "0";
    document.body.appendChild(area);
    area.select();
    try {
      return document.execCommand("copy");
    } catch {
      return false;
    } finally {
      area.remove();
    }
  }
}
