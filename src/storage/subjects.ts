// Subject filter matching for the stores, without splitting into token arrays: filters are
// tested against every distinct subject in a stream, so this must not allocate.

const DOT = 46;
const STAR = 42;
const GT = 62;

/** True when filter ("" or ">" = everything, `*` one token, `>` one or more tail tokens) matches subject. */
export function subjectMatches(filter: string, subject: string): boolean {
  if (filter === "" || filter === ">" || filter === subject) return true;
  const fl = filter.length;
  const sl = subject.length;
  let fi = 0;
  let si = 0;
  for (;;) {
    if (si > sl) return false; // filter has tokens left, subject has none
    let fe = filter.indexOf(".", fi);
    if (fe < 0) fe = fl;
    let se = subject.indexOf(".", si);
    if (se < 0) se = sl;
    const flen = fe - fi;
    if (flen === 1 && filter.charCodeAt(fi) === GT) return true;
    if (!(flen === 1 && filter.charCodeAt(fi) === STAR)) {
      if (flen !== se - si) return false;
      for (let k = 0; k < flen; k++) {
        if (filter.charCodeAt(fi + k) !== subject.charCodeAt(si + k)) return false;
      }
    }
    fi = fe + 1;
    si = se + 1;
    if (fi > fl) return si > sl;
  }
}

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
