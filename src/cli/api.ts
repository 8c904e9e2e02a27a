// Raw JetStream API requests, for the calls where the CLI must show the API's own JSON
// or where the client libraries have no helper (snapshots, $JS.API.INFO).
import type { NatsConnection } from "@nats-io/transport-node";
import { CliError } from "./output.js";

export interface ApiErrorBody {
  code: number;
  err_code?: number;
  description?: string;
}

/** A JetStream API error reply: printed as "<description> (<err_code>)". */
export class ApiError extends CliError {
  readonly code: number;
  readonly errCode: number;
  readonly description: string;
  constructor(e: ApiErrorBody) {
    const desc = e.description ?? `error code ${e.code}`;
    super(e.err_code !== undefined ? `${desc} (${e.err_code})` : desc);
    this.name = "ApiError";
    this.code = e.code;
    this.errCode = e.err_code ?? 0;
    this.description = desc;
  }
}

const enc = new TextEncoder();
const dec = new TextDecoder();

export async function jsApi<T>(nc: NatsConnection, subject: string, body: unknown, timeoutMs: number): Promise<T> {
  const payload = body === undefined ? new Uint8Array(0) : enc.encode(JSON.stringify(body));
  let msg;
  try {
    msg = await nc.request(subject, payload, { timeout: timeoutMs });
  } catch (e) {
    throw requestError(e, subject);
  }
  const text = dec.decode(msg.data);
  if (text === "") {
    const status = msg.headers?.code;
    throw new CliError(`empty reply from ${subject}${status !== undefined ? ` (status ${status})` : ""}`);
  }
  const parsed = JSON.parse(text) as T & { error?: ApiErrorBody };
  if (parsed.error !== undefined) throw new ApiError(parsed.error);
  return parsed;
}

/** Clearer words for the two ways an API request fails without an answer. */
export function requestError(e: unknown, subject: string): Error {
  const err = e as Error;
  const text = `${err.name} ${err.message}`.toLowerCase();
  if (text.includes("no responders") || text.includes("503")) {
    return new CliError(
      subject.startsWith("$JS.") ? `JetStream is not available: no responders for ${subject}` : `no responders for ${subject}`,
    );
  }
  if (text.includes("timeout")) return new CliError(`request timed out: no reply on ${subject}`);
  return err;
}
