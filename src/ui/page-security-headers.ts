import { createHash } from "node:crypto";

/**
 * pageSecurityHeaders: the headers every dashboard response carries. The Content-Security-Policy
 * allows exactly the page's own inline script and style (by their SHA-256, so an injected script
 * or style never runs), requests to the dashboard itself only, no frames around it, no forms and
 * no plugins; a task's text (a log line, a traceback) that the page showed as markup could do
 * nothing. The page has no style attributes and no event handler attributes, which this forbids.
 */
export function pageSecurityHeaders(page: string): Record<string, string> {
  const hashes = (tag: string) =>
    [...page.matchAll(new RegExp(`<${tag}>([\\s\\S]*?)</${tag}>`, "g"))].map((m) => `'sha256-${createHash("sha256").update(m[1]!).digest("base64")}'`).join(" ");
  const csp = [
    "default-src 'none'",
    `script-src ${hashes("script")}`,
    `style-src ${hashes("style")}`,
    "img-src 'self' data:",
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join("; ");
  return {
    "content-security-policy": csp,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
    "cross-origin-resource-policy": "same-origin",
  };
}
