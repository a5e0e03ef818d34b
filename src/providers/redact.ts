/** Replaces every secret (≥ 4 chars) in `text` with `[redacted]`: error messages never carry keys. */
export function redact(text: string, secrets?: readonly (string | null | undefined)[]): string {
  let out = text;
  for (const s of secrets ?? []) {
    if (s && s.length >= 4) out = out.split(s).join('[redacted]');
  }
  return out;
}
