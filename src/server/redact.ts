// Secrets out of trace lines: a traced CONNECT shows `"pass":"[REDACTED]"` instead of the
// password (nats-server removeSecretsFromTrace). Fields redacted: any starting with "pass"
// or "auth_token" (password, passwd, auth_token), and exactly sig, proxy_sig, nkey, jwt
// (nats-server since 2.12 hides sig, proxy_sig and nkey too; a jwt is a bearer credential).
// Only called when tracing: the regex costs nothing on the normal path.

export const REDACTED = "[REDACTED]";

// (boundary)(key, optional quotes and spaces, ':' or '=', optional quote)(value). The value
// ends at a quote, a comma, a closing brace or the end of the line, as in nats-server, so
// a JSON value and a hand-typed `pass = x` are both covered.
const SECRET_FIELD = /(^|[^A-Za-z0-9_])("?\s*(?:pass[A-Za-z0-9_]*|auth_token[A-Za-z0-9_]*|proxy_sig|sig|nkey|jwt)"?\s*[:=]\s*"?)([^",\r\n}]*)/gi;

/** The line with the value of every secret field replaced by [REDACTED]. */
export function redactSecrets(line: string): string {
  SECRET_FIELD.lastIndex = 0;
  if (!SECRET_FIELD.test(line)) return line;
  return line.replace(SECRET_FIELD, (_m, pre: string, key: string) => pre + key + REDACTED);
}
