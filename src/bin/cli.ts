#!/usr/bin/env node
// The `tsnats` command line: a nats CLI work-alike built on the official NATS clients.
import { main } from "../cli/main.js";

main(process.argv).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`tsnats: error: ${String(err)}\n`);
    process.exitCode = 1;
  },
);
