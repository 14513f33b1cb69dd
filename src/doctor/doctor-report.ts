import type { CheckResult } from "./doctor-check";

export interface ReportedCheck extends CheckResult {
  readonly id: string;
  readonly title: string;
}

export interface DoctorReport {
  readonly role: string;
  readonly ok: boolean;
  readonly checks: readonly ReportedCheck[];
}

/** renderReport: one line per check (PASS/FAIL, id, detail) and the fix under each failure, then a summary line. */
export function renderReport(r: DoctorReport, header: string): string {
  const width = Math.max(...r.checks.map((c) => c.id.length), 4);
  const lines = [header];
  for (const c of r.checks) {
    lines.push(`  ${c.status === "pass" ? "PASS" : "FAIL"}  ${c.id.padEnd(width)}  ${c.detail}`);
    if (c.status === "fail") lines.push(`        ${"".padEnd(width)}  fix: ${c.fix}`);
  }
  const failed = r.checks.filter((c) => c.status === "fail").length;
  lines.push(failed === 0 ? `all ${r.checks.length} checks passed` : `${failed} of ${r.checks.length} checks failed`);
  return lines.join("\n");
}
