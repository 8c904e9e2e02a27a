// Subject helpers for the stores, without splitting into token arrays: filters are tested
// against every distinct subject in a stream, so nothing here allocates.

const DOT = 46;
const STAR = 42;
const GT = 62;

// The one filter match lives in src/subjects/subject.ts (filterMatches: "" matches every
// subject). subjectMatches here is its old name for the stores (same meaning), kept so that
// other branches compile; new code imports filterMatches.
export { filterMatches, filterMatches as subjectMatches, filterMatcher } from "../subjects/subject.js";

/** True when the subject has no `*` or `>` token. "" counts as a wildcard (matches all). */
export function isLiteralSubject(s: string): boolean {
  if (s === "") return false;
  const n = s.length;
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    if ((c === STAR || c === GT) && (i === 0 || s.charCodeAt(i - 1) === DOT) && (i + 1 === n || s.charCodeAt(i + 1) === DOT)) {
      return false;
    }
  }
  return true;
}

/** "" and ">" both mean "every subject". */
export function isAllFilter(filter: string): boolean {
  return filter === "" || filter === ">";
}
