/** Reading the web UI's HTML in tests: what an escaped text was. */

/** The text an HTML-escaped string stands for (the UI escapes `<`, `>`, `"`, `'` and `&`). */
export function unescapeHtml(text: string): string {
  return text
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, '&');
}
