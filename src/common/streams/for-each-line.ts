/**
 * forEachLine reads a byte stream to its end and calls onLine for every non-blank line (without
 * its newline), including a last line that has none. With `maxLineChars`, a longer line is cut:
 * its first `maxLineChars` characters are passed on with `cut` set and the rest, to its newline, is
 * skipped, so a writer that never ends a line cannot make the reader hold more than that.
 */
export async function forEachLine(
  stream: ReadableStream<Uint8Array>,
  onLine: (line: string, cut: boolean) => void,
  maxLineChars = Number.POSITIVE_INFINITY,
): Promise<void> {
  const decoder = new TextDecoder();
  let buf = "";
  let skipping = false;
  for await (const chunk of stream) {
    buf += decoder.decode(chunk, { stream: true });
    let nl: number;
    while ((nl = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (skipping) skipping = false;
      else if (line.trim()) onLine(line.slice(0, maxLineChars), line.length > maxLineChars);
    }
    if (buf.length > maxLineChars) {
      if (!skipping) onLine(buf.slice(0, maxLineChars), true);
      skipping = true;
      buf = "";
    }
  }
  if (buf.trim() && !skipping) onLine(buf, false);
}
